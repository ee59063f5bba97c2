// Why the domain refuses a command. The HTTP layer and the operator commands map these
// to their own answers (404/412, exit 1).

export class PetNotTracked extends Error {
  constructor(readonly petId: bigint) {
    super(`pet ${petId} is not tracked`);
    this.name = 'PetNotTracked';
  }
}

export class PetAlreadyTracked extends Error {
  constructor(readonly petId: bigint) {
    super(`pet ${petId} is already tracked`);
    this.name = 'PetAlreadyTracked';
  }
}

/** The command's precondition refused the entry's current version; `failed` names which
 * condition (as the precondition called it). Not to be confused with the store's
 * VersionConflict: that is another writer coming first, and the command is decided again. */
export class PreconditionFailed extends Error {
  constructor(
    readonly petId: bigint,
    readonly currentVersion: number,
    readonly failed: string,
  ) {
    super(`pet ${petId} is at version ${currentVersion}, which the precondition (${failed}) refuses`);
    this.name = 'PreconditionFailed';
  }
}
