/**
 * The CLI's exit codes; 130 is what a shell reports for a process stopped by Ctrl-C, and 75 is
 * sysexits' EX_TEMPFAIL: the run store did not answer, try again later (the run is saved).
 */
export const EXIT = {
  passed: 0,
  failed: 1,
  usage: 2,
  awaitingApproval: 3,
  storeUnavailable: 75,
  stopped: 130,
} as const;
