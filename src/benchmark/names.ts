// The benchmark's names with nothing behind them: the CLI declares `selfheal bench`'s flags from
// here, so its help and a usage error load no dataset reader, schema or graph. Internal.

/** The datasets `--dataset` takes by name; their files and fixes are in dataset.ts. */
export const DATASET_NAMES = ["humaneval", "humanevalplus", "mbppplus"] as const;
export type DatasetName = (typeof DATASET_NAMES)[number];

/**
 * What a failed attempt may learn from. `visible`: the task's own examples and the program's
 * self-checks, what a user would have; the hidden tests judge only when the run has ended.
 * `oracle`: the hidden tests are the run's tests, so their failures reach the fixer.
 */
export const FEEDBACK_MODES = ["visible", "oracle"] as const;
export type FeedbackMode = (typeof FEEDBACK_MODES)[number];
