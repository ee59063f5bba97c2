// Which representation a request's Accept header asks for: the change feed serves pages
// as JSON and a stream as Server-Sent Events on one path.

/** The media ranges of an Accept header, parameters other than q left out of the match. */
function ranges(accept: string): { type: string; q: number }[] {
  return accept.split(',').map((part) => {
    const [type = '', ...params] = part.split(';');
    let q = 1;
    for (const param of params) {
      const [name = '', value = ''] = param.split('=');
      if (name.trim().toLowerCase() === 'q') q = /^\s*(0(\.\d{0,3})?|1(\.0{0,3})?)\s*$/.test(value) ? Number(value) : 0;
    }
    return { type: type.trim().toLowerCase(), q };
  });
}

/** The q an Accept header gives a media type: that of its most specific matching range. */
function qualityOf(given: { type: string; q: number }[], type: string): number {
  const major = `${type.slice(0, type.indexOf('/'))}/*`;
  let best: { rank: number; q: number } = { rank: -1, q: 0 };
  for (const r of given) {
    const rank = r.type === type ? 2 : r.type === major ? 1 : r.type === '*/*' ? 0 : -1;
    if (rank > best.rank) best = { rank, q: r.q };
  }
  return best.q;
}

/**
 * Whether a request asks for the stream: its Accept header gives text/event-stream a
 * higher q than application/json (media-type parameters such as charset do not matter;
 * text/* is the stream, *\/* and no header are JSON pages, a tie is JSON).
 */
export function wantsStream(accept: string | undefined): boolean {
  if (!accept?.trim()) return false;
  const given = ranges(accept);
  const stream = qualityOf(given, 'text/event-stream');
  return stream > 0 && stream > qualityOf(given, 'application/json');
}
