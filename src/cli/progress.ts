// A progress bar on standard error for long operator runs, drawn only when a person
// watches (a terminal); in a pipe or a log it prints nothing.
export function progressBar(stream: NodeJS.WriteStream, label = 'replaying'): ((done: number, total: number) => void) | undefined {
  if (!stream.isTTY) return undefined;
  const width = 30;
  return (done, total) => {
    const fraction = total > 0 ? Math.min(1, done / total) : 1;
    const filled = Math.round(fraction * width);
    const bar = `${'#'.repeat(filled)}${'.'.repeat(width - filled)}`;
    stream.write(
      `\r${label} [${bar}] ${(fraction * 100).toFixed(0).padStart(3)}%  ${done.toLocaleString('en')} / ${total.toLocaleString('en')} events`,
    );
    if (done >= total) stream.write('\n');
  };
}
