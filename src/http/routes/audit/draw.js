/* global document, window */
// What the auditors' page draws: a receipt's inclusion path as the path up the tree (SVG,
// built with the DOM, no markup from data), and a pet's quantity over time as a step chart
// (uPlot, served by the service).
import { toBase64 } from './verify.js';

const SVG = 'http://www.w3.org/2000/svg';
const ROW = 58;
const WIDTH = 560;

function svg(name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

function box(parent, x, y, label, title, kind) {
  const group = svg('g', { class: `node ${kind}` });
  group.append(svg('title', {}, title), svg('rect', { x: x - 80, y: y - 14, width: 160, height: 28, rx: 6 }));
  group.append(svg('text', { x, y: y + 5, 'text-anchor': 'middle' }, label));
  parent.append(group);
}

const short = (bytes) => `${toBase64(bytes).slice(0, 12)}…`;

/**
 * The path from the event's leaf (at the bottom) up to the root (at the top): at each
 * level the hash computed so far, in the middle, joined with the sibling the proof gives
 * on its side; the top is the signed root, green when the path reaches it.
 */
export function drawInclusionPath(container, { path, checkpoint }) {
  const levels = path.steps.length;
  const height = (levels + 2) * ROW;
  const picture = svg('svg', { viewBox: `0 0 ${WIDTH} ${height}`, width: WIDTH, height, role: 'img', class: 'tree-path' });
  picture.append(svg('title', {}, `the inclusion path: ${levels} levels from the event's leaf to the signed root`));
  const yOf = (level) => height - ROW / 2 - level * ROW;
  const middle = WIDTH / 2;
  box(picture, middle, yOf(0), `leaf ${short(path.leaf)}`, `SHA-256(0x00 || event hash) = ${toBase64(path.leaf)}`, 'leaf');
  path.steps.forEach((step, i) => {
    const x = step.side === 'left' ? middle - 170 : middle + 170;
    picture.append(svg('line', { x1: middle, y1: yOf(i) - 14, x2: middle, y2: yOf(i + 1) + 14, class: 'edge' }));
    picture.append(svg('line', { x1: x, y1: yOf(i) - 14, x2: middle, y2: yOf(i + 1) + 14, class: 'edge' }));
    box(
      picture,
      x,
      yOf(i),
      `${step.side} ${short(step.sibling)}`,
      `the proof's hash ${i + 1}, on the ${step.side}: ${toBase64(step.sibling)}`,
      'sibling',
    );
    box(picture, middle, yOf(i + 1), short(step.hash), `level ${i + 1}: ${toBase64(step.hash)}`, 'computed');
  });
  const reached = path.root !== undefined && toBase64(path.root) === toBase64(checkpoint.root);
  const top = yOf(levels + 1);
  picture.append(svg('line', { x1: middle, y1: yOf(levels) - 14, x2: middle, y2: top + 14, class: reached ? 'edge' : 'edge broken' }));
  box(
    picture,
    middle,
    top,
    `signed root ${short(checkpoint.root)}`,
    `the checkpoint's root (${checkpoint.size} events): ${toBase64(checkpoint.root)}`,
    reached ? 'root ok' : 'root failed',
  );
  container.replaceChildren(picture);
}

/** A time of the chart (seconds) as the log writes times, in UTC: 2026-03-04 17:26:05.123 UTC. */
const utc = (seconds) => `${new Date(seconds * 1000).toISOString().replace('T', ' ').replace('Z', '')} UTC`;

/**
 * The quantity after each change, held until the next (a step chart), times in seconds,
 * shown in UTC on the axis and in the legend, as the table and the log write them. uPlot
 * draws a series from the first point inside the view, so a zoomed view would be blank
 * before its first change: the path starts one point earlier (and ends one later), so
 * that the step carried into the view is drawn, clipped at its edge.
 */
export function drawStockChart(container, rows, title) {
  const times = new Float64Array(rows.length);
  const quantities = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    times[i] = Date.parse(rows[i].recorded_at) / 1000;
    quantities[i] = rows[i].quantity;
  }
  const width = Math.max(320, Math.min(960, container.clientWidth || 960));
  const stepped = window.uPlot.paths.stepped({ align: 1 });
  const last = rows.length - 1;
  const options = {
    title,
    width,
    height: 300,
    tzDate: (seconds) => window.uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
    scales: { x: { time: true } },
    series: [
      { label: 'time (UTC)', value: (_u, seconds) => (seconds == null ? '' : utc(seconds)) },
      {
        label: 'quantity',
        stroke: '#1f6feb',
        width: 2,
        fill: 'rgba(31,111,235,0.08)',
        paths: (u, series, first, end) => stepped(u, series, Math.max(0, first - 1), Math.min(last, end + 1)),
      },
    ],
    axes: [{ label: 'time (UTC)' }, { label: 'quantity' }],
  };
  container.replaceChildren();
  return new window.uPlot(options, [times, quantities], container);
}
