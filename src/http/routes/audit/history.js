/* global document, performance, requestAnimationFrame, setTimeout, URLSearchParams */
// Stock adjustments by pet, clerk and time window (UTC): every page of them read, shown as
// a table (and, for one pet, as a chart of its quantity), and downloaded as one CSV file.
import { drawStockChart } from './draw.js';
import { $, api, download, guarded, say, state } from './common.js';

const PAGE = 1000;
// The table lists the newest rows only: thousands of rows cost the browser more to lay out
// than the chart of all of them to draw, and the CSV holds every row.
const TABLE_ROWS = 1000;

// A date, or a date and a time; with no zone given it is read as UTC, as the labels say.
const WITHOUT_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/;

/** The form's filters as the API's query parameters; an error names a wrong one. */
function filtersOf() {
  const filters = new URLSearchParams();
  const pet = $('pet').value.trim();
  if (pet !== '') {
    if (!/^[1-9]\d{0,18}$/.test(pet)) throw new Error('A pet id is decimal digits, from 1.');
    filters.set('pet', pet);
  }
  const actor = $('actor').value.trim();
  if (actor !== '') filters.set('actor', actor);
  for (const name of ['since', 'until']) {
    const text = $(name).value.trim();
    if (text !== '') filters.set(name, WITHOUT_ZONE.test(text) ? `${text}Z` : text);
  }
  return filters;
}

/** Every page of the filters' adjustments, in the given format, as the list of bodies. */
async function allPages(filters, format, read) {
  const bodies = [];
  for (let after = 0; after !== null;) {
    const query = new URLSearchParams(filters);
    query.set('after', String(after));
    query.set('limit', String(PAGE));
    query.set('format', format);
    const res = await api(`/v1/audit/stock-adjustments?${query}`);
    const body = await read(res);
    bodies.push(body);
    after = format === 'json' ? body.next : nextOf(res);
  }
  return bodies;
}

const nextOf = (res) => {
  const m = /[?&]after=(\d+)/.exec(res.headers.get('Link') ?? '');
  return m ? Number(m[1]) : null;
};

/** The newest TABLE_ROWS rows as the table's body: one row cloned per change and its
 * cells' text set, the quickest way to build many rows. */
function showTable(all) {
  const rows = all.slice(-TABLE_ROWS);
  const template = document.createElement('tr');
  for (const number of [true, false, true, true, true, true, false, false]) {
    const cell = template.insertCell();
    if (number) cell.className = 'number';
  }
  const body = document.createDocumentFragment();
  for (const r of rows) {
    const tr = template.cloneNode(true);
    const cells = tr.cells;
    cells[0].textContent = String(r.seq);
    cells[1].textContent = r.recorded_at;
    cells[2].textContent = String(r.pet_id);
    cells[3].textContent = String(r.previous_quantity);
    cells[4].textContent = String(r.quantity);
    cells[5].textContent = r.delta > 0 ? `+${r.delta}` : String(r.delta);
    cells[6].textContent = r.actor;
    cells[7].textContent = r.request_id ?? '';
    body.append(tr);
  }
  $('changes').tBodies[0].replaceChildren(body);
  $('changes').hidden = rows.length === 0;
  $('table-note').textContent =
    all.length > rows.length ? `The table lists the newest ${rows.length} of ${all.length} changes; the CSV holds them all.` : '';
}

/** What the filters select, in words: "pet 7, by clerk-ben, from … until … (UTC)". */
function described(filters) {
  const parts = [];
  if (filters.has('pet')) parts.push(`pet ${filters.get('pet')}`);
  if (filters.has('actor')) parts.push(`by ${filters.get('actor')}`);
  if (filters.has('since')) parts.push(`from ${filters.get('since')}`);
  if (filters.has('until')) parts.push(`until ${filters.get('until')}`);
  return parts.length === 0 ? 'the whole log' : parts.join(', ');
}

/** Listens on the page's history controls: the filters' adjustments, and their CSV. */
export function wireHistory() {
  $('pet-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded('history-status', async () => {
      const started = performance.now();
      const filters = filtersOf();
      const pages = await allPages(filters, 'json', (res) => res.json());
      const read = performance.now();
      state.rows = pages.flatMap((p) => p.adjustments);
      state.filters = filters;
      $('csv').disabled = state.rows.length === 0;
      const what = described(filters);
      // A chart of one quantity: one pet's.
      if (state.rows.length > 0 && filters.has('pet'))
        drawStockChart($('chart'), state.rows, `Pet ${filters.get('pet')}: quantity over time (UTC)`);
      else $('chart').replaceChildren();
      showTable(state.rows);
      if (state.rows.length === 0) {
        say('history-status', `No stock adjustments for ${what}.`);
        return;
      }
      // Read once the next frame is painted: the time drawn includes the chart's drawing
      // (uPlot draws in a microtask), the layout and the paint, not only this script.
      await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
      const [readMs, drawnMs] = [Math.round(read - started), Math.round(performance.now() - read)];
      $('chart').dataset.readMs = String(readMs);
      $('chart').dataset.drawnMs = String(drawnMs);
      say('history-status', `${state.rows.length} changes for ${what}: read in ${readMs} ms, drawn in ${drawnMs} ms.`);
    });
  });

  $('csv').addEventListener('click', () =>
    guarded('history-status', async () => {
      const pages = await allPages(state.filters, 'csv', (res) => res.text());
      // Each page starts with the header line; the file has it once.
      const text = pages.map((p, i) => (i === 0 ? p : p.slice(p.indexOf('\n') + 1))).join('');
      const pet = state.filters.get('pet');
      download(text, pet === null ? 'stock-adjustments.csv' : `stock-adjustments-${pet}.csv`, 'text/csv');
    }),
  );
}
