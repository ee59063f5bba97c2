// Finds a member name that appears twice in one JSON object. JSON.parse keeps the last
// one silently, so {"quantity":1,"quantity":9} would pass as one member; we refuse it.
// Only called on text JSON.parse has accepted, so the scan can trust the grammar.
export function duplicateMember(text: string): string | undefined {
  const frames: { keys: Set<string> | undefined; expectKey: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = frames.at(-1);
    if (c === '{') frames.push({ keys: new Set(), expectKey: true });
    else if (c === '[') frames.push({ keys: undefined, expectKey: false });
    else if (c === '}' || c === ']') frames.pop();
    else if (c === ',' && top?.keys) top.expectKey = true;
    else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (top?.keys && top.expectKey) {
        const name = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.keys.has(name)) return name;
        top.keys.add(name);
        top.expectKey = false;
      }
      i = end;
    }
  }
  return undefined;
}
