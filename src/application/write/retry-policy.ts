// How a command that met another writer's commit is decided again: the policy as data,
// and the one loop that follows it within the caller's deadline.
import { DeadlinePassed } from '../../store/health.ts';
import { CommitFailed } from './group-commit.ts';

/**
 * How a command that met another writer's commit (a VersionConflict: progress, not a
 * stall) is tried again: at most `attempts` decisions in all, the n-th retry after
 * `minTimeoutMs * factor^(n-1)` (0: in the next batch). The deadline bounds the whole
 * whatever the policy says. (emmett's `retries: { retries, minTimeout, factor }`.)
 */
export interface RetryPolicy {
  attempts: number;
  minTimeoutMs: number;
  factor: number;
}

// Conflicts come from other processes writing the same pets; each is another writer's
// progress, so many attempts are allowed, the deadline bounding them
// (docs/performance.md has what was measured).
export const DEFAULT_RETRY: RetryPolicy = { attempts: 20, minTimeoutMs: 0, factor: 2 };

/**
 * Runs `attempt` until it succeeds or fails with an error `shouldRetry` does not take,
 * as the policy allows and not past `deadline` (Date.now()). Out of time or attempts it
 * fails with CommitFailed: others kept writing, "not now", like a lock held too long.
 */
export async function retrying<T>(
  policy: RetryPolicy,
  deadline: number,
  shouldRetry: (error: unknown) => boolean,
  attempt: () => Promise<T>,
): Promise<T> {
  for (let n = 1; ; n++) {
    // A request that spent its time before it got here (a slow authentication) is not
    // carried out after it was answered.
    if (Date.now() >= deadline) throw n === 1 ? new DeadlinePassed() : new CommitFailed(new DeadlinePassed());
    try {
      return await attempt();
    } catch (error) {
      if (!shouldRetry(error)) throw error;
      if (n >= policy.attempts || Date.now() >= deadline) throw new CommitFailed(error);
      const pause = Math.min(policy.minTimeoutMs * policy.factor ** (n - 1), deadline - Date.now());
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
