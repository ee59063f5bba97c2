// The storage port's failures that a caller of the application answers: the edge maps
// them to 503s without reaching below the application for them.
export { CommitUnconfirmed } from '../../store/event-log.ts';
export { ChainHeadMismatch, chainHeadMismatchIn, StoreUnavailable, type StorageFault } from '../../store/health.ts';
