/* global performance */
// A pet's stock history: every page of its adjustments read, shown as a table and a chart,
// and downloaded as one CSV file.
import { drawStockChart } from './draw.js';
import { $, api, download, element, guarded, say, state } from './common.js';

const PAGE = 1000;

/** Every page of the pet's adjustments, in the given format, as the list of bodies. */
async function allPages(pet, format, read) {
  const bodies = [];
  for (let after = 0; after !== null;) {
    const res = await api(`/v1/audit/stock-adjustments?pet=${pet}&after=${after}&limit=${PAGE}&format=${format}`);
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

function showTable(rows) {
  const cell = (text, number = false) => element('td', number ? { class: 'number' } : {}, text);
  const delta = (d) => (d > 0 ? `+${d}` : String(d));
  $('changes').tBodies[0].replaceChildren(
    ...rows.map((r) =>
      element(
        'tr',
        {},
        cell(String(r.seq), true),
        cell(r.recorded_at),
        cell(String(r.previous_quantity), true),
        cell(String(r.quantity), true),
        cell(delta(r.delta), true),
        cell(r.actor),
        cell(r.request_id ?? ''),
      ),
    ),
  );
  $('changes').hidden = rows.length === 0;
}

/** Listens on the page's history controls: a pet's history, and its CSV. */
export function wireHistory() {
  $('pet-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded('history-status', async () => {
      const started = performance.now();
      const pet = $('pet').value.trim();
      if (!/^[1-9]\d{0,18}$/.test(pet)) throw new Error('A pet id is decimal digits, from 1.');
      const pages = await allPages(pet, 'json', (res) => res.json());
      const read = performance.now();
      state.rows = pages.flatMap((p) => p.adjustments);
      state.pet = pet;
      showTable(state.rows);
      $('csv').disabled = state.rows.length === 0;
      if (state.rows.length === 0) {
        $('chart').replaceChildren();
        say('history-status', `Pet ${pet} has no stock adjustments.`);
        return;
      }
      drawStockChart($('chart'), state.rows, `Pet ${pet}: quantity over time`);
      const [readMs, drawnMs] = [Math.round(read - started), Math.round(performance.now() - read)];
      $('chart').dataset.readMs = String(readMs);
      $('chart').dataset.drawnMs = String(drawnMs);
      say('history-status', `${state.rows.length} changes of pet ${pet}: read in ${readMs} ms, drawn in ${drawnMs} ms.`);
    });
  });

  $('csv').addEventListener('click', () =>
    guarded('history-status', async () => {
      const pages = await allPages(state.pet, 'csv', (res) => res.text());
      // Each page starts with the header line; the file has it once.
      const text = pages.map((p, i) => (i === 0 ? p : p.slice(p.indexOf('\n') + 1))).join('');
      download(text, `stock-adjustments-${state.pet}.csv`, 'text/csv');
    }),
  );
}
