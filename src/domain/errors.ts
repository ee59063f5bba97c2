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

export class VersionMismatch extends Error {
  constructor(
    readonly petId: bigint,
    readonly currentVersion: number,
  ) {
    super(`pet ${petId} is at version ${currentVersion}, which the precondition does not match`);
    this.name = 'VersionMismatch';
  }
}
