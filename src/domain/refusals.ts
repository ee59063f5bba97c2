// Why the domain refuses a command: a value decide returns, not an error it throws (an
// exception is a fault, a bug). The HTTP layer and the operator commands map each reason
// to their own answers (404/412, exit 1).

export type Refusal =
  | { reason: 'not_tracked'; petId: bigint }
  | { reason: 'already_tracked'; petId: bigint }
  /** The command's precondition refused the entry's current version; `failed` names which
   * condition (as the precondition called it). Not to be confused with the store's
   * VersionConflict: that is another writer coming first, and the command is decided again. */
  | { reason: 'precondition_failed'; petId: bigint; currentVersion: number; failed: string };
