// One in-process signal that this process committed events. Whatever must react to a
// commit (the change feed, storage health) subscribes here, so the command handler
// tells one thing, not each of them.

interface CommitSignal {
  /** Calls listener after each commit of this process; returns the unsubscribe. */
  subscribe(listener: () => void): () => void;
  /** This process committed events. */
  emit: () => void;
}

export function makeCommitSignal(): CommitSignal {
  const listeners = new Set<() => void>();
  return {
    subscribe(listener) {
      // Wrapped, so that one function subscribed twice is called twice and unsubscribed once.
      const entry = () => listener();
      listeners.add(entry);
      return () => listeners.delete(entry);
    },
    emit() {
      for (const listener of listeners) listener();
    },
  };
}
