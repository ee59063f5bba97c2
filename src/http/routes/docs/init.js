/* global window, fetch */
// The docs page's one script: Swagger UI over the document this service serves, with
// "Try it out" aimed at this very service (the document's own servers are the
// production and staging hosts). Nothing is fetched from anywhere else: no validator
// badge, no remote URL box, and the key the user gives "Authorize" is kept in this page
// only (not persisted).

// Pet ids go up to 2^63-1, but JSON.parse rounds integers above 2^53 (9007199254740993
// would show as ...992), and Swagger UI pretty-prints a JSON answer through JSON.parse
// and JSON.stringify. Where the browser can (JSON.rawJSON and the parse source, Chrome
// 114 and later, Firefox 135 and later), such integers are kept as the digits the
// service sent.
if (typeof JSON.rawJSON === 'function') {
  const parse = JSON.parse;
  JSON.parse = (text, reviver) =>
    parse(text, function (key, value, context) {
      const exact =
        typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? '')
          ? JSON.rawJSON(context.source)
          : value;
      return reviver ? reviver.call(this, key, exact, context) : exact;
    });
}

window.addEventListener('load', async () => {
  const response = await fetch('/openapi.json');
  const spec = await response.json();
  spec.servers = [{ url: `${window.location.origin}/v1`, description: 'This service' }, ...(spec.servers ?? [])];
  window.ui = window.SwaggerUIBundle({
    spec,
    dom_id: '#swagger-ui',
    layout: 'BaseLayout',
    presets: [window.SwaggerUIBundle.presets.apis],
    deepLinking: false,
    validatorUrl: null,
    persistAuthorization: false,
    tryItOutEnabled: true,
    defaultModelsExpandDepth: 0,
  });
});
