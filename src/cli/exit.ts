/** The CLI's exit codes; 130 is what a shell reports for a process stopped by Ctrl-C. */
export const EXIT = { passed: 0, failed: 1, usage: 2, awaitingApproval: 3, stopped: 130 } as const;
