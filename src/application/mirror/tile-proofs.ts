// Proofs where no proof route answers: a copy served by a static web server has the
// tiles but not /v1/log/proof/*. A proof is then folded from the tiles that hold its
// nodes, a handful per level, and answered as the route would answer it. Nothing here is
// trusted: whoever asked checks the proof against a signed checkpoint, as always.
import { consistencyRanges, inclusionRanges, nodesOf, proofHashes } from '../../support/merkle.ts';
import { tilePath, TILE_HEIGHT, TILE_WIDTH } from '../../support/tiles.ts';
import { AnsweredStatus, type LogSource } from './log-source.ts';
import { hashesAt, hashesOf, nodeLookup } from './tree-tiles.ts';

const PROOF = /^\/v1\/log\/proof\/(inclusion|consistency)\?(?:seq|from)=(\d+)&(?:size|to)=(\d+)$/;

/** The proof a proof route would give, folded from the tiles of the tree of size leaves. */
async function proofFromTiles(source: LogSource, kind: string, a: number, size: number): Promise<string> {
  const ranges = kind === 'inclusion' ? inclusionRanges(a - 1, size) : consistencyRanges(a, size);
  const tiles = new Map<string, Buffer[]>();
  for (const { level, index } of nodesOf(ranges)) {
    const tileLevel = Math.floor(level / TILE_HEIGHT);
    const tileIndex = Math.floor((index * 2 ** (level - tileLevel * TILE_HEIGHT)) / TILE_WIDTH);
    const id = `${tileLevel}/${tileIndex}`;
    if (tiles.has(id)) continue;
    const width = Math.min(TILE_WIDTH, hashesAt(size, tileLevel) - tileIndex * TILE_WIDTH);
    tiles.set(id, hashesOf(await source.bytes(`/v1/log/${tilePath({ kind: tileLevel, index: tileIndex, width })}`)));
  }
  const hashes = proofHashes(
    ranges,
    nodeLookup((level, index) => tiles.get(`${level}/${index}`)),
  );
  return JSON.stringify({ hashes: hashes.map((h) => h.toString('base64')) });
}

/** GETs text from source; a proof route that is not there (404) is answered from the tiles. */
export function withTileProofs(source: LogSource): (path: string) => Promise<string> {
  return async (path) => {
    try {
      return await source.text(path);
    } catch (error) {
      const proof = PROOF.exec(path);
      if (!(error instanceof AnsweredStatus && error.status === 404 && proof)) throw error;
      return proofFromTiles(source, proof[1]!, Number(proof[2]), Number(proof[3]));
    }
  };
}
