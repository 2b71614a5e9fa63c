import type { BaseMessage } from "@langchain/core/messages";
import { messageText, type RunInput, ScriptedChatModel } from "../internal.js";
import { createDemoModel } from "./demo-model.js";

/** `selfheal demo --data`: a data task with a real input file in and a real chart out. */
export const DATA_DEMO_TASK =
  "Read sales.csv (columns region, month, revenue), total the revenue per region, print the totals, " +
  "and save a bar chart of them as out/chart.png.";

export const DATA_DEMO_SALES_CSV = [
  "region,month,revenue",
  "north,2026-01,1200",
  "south,2026-01,800",
  "east,2026-01,950",
  "north,2026-02,1350",
  "south,2026-02,700",
  "east,2026-02,1100",
  "",
].join("\n");

/** What the data demo brings besides its task: the CSV as an input, and the chart it must produce. */
export const DATA_DEMO_INPUT: Partial<RunInput> = {
  inputs: { "sales.csv": { content: DATA_DEMO_SALES_CSV } },
  expect: ["out/chart.png"],
};

/**
 * The first draft reads the column as `Revenue`, which the CSV does not have, so pandas really
 * raises KeyError. matplotlib needs a non-interactive backend and a writable config folder: the
 * sandbox's home is not one, so both are set before it is imported.
 */
const DATA_DRAFT = `import os

os.environ["MPLBACKEND"] = "Agg"
os.environ["MPLCONFIGDIR"] = os.path.abspath(".matplotlib")

import matplotlib.pyplot as plt
import pandas as pd

sales = pd.read_csv("sales.csv")
totals = sales.groupby("region")["Revenue"].sum().sort_values(ascending=False)
print(totals.to_string())

figure, axes = plt.subplots(figsize=(6, 4))
totals.plot.bar(ax=axes, color="#4c72b0")
axes.set_ylabel("revenue")
axes.set_title("Revenue per region")
figure.tight_layout()
figure.savefig("out/chart.png")
assert os.path.getsize("out/chart.png") > 0
print("saved out/chart.png")
`;

export const DATA_DEMO_FIXED_CODE = DATA_DRAFT.replace('["Revenue"]', '["revenue"]');

const DATA_FIRST_PROGRAM = `\`\`\`python\n${DATA_DRAFT}\`\`\``;
const DATA_FIXED_PROGRAM =
  "The KeyError shows the column is `revenue`, in lower case, as the input's header line says.\n\n" +
  `\`\`\`python\n${DATA_DEMO_FIXED_CODE}\`\`\``;

/** Repairs the draft only when its prompt carries the real KeyError from the sandbox. */
export function createDataDemoModel(): ScriptedChatModel {
  return new ScriptedChatModel([
    (messages: BaseMessage[]) =>
      messages.some((message) => messageText(message).includes("KeyError")) ? DATA_FIXED_PROGRAM : DATA_FIRST_PROGRAM,
  ]);
}

export const DATA_DEMO_BANNER =
  "selfheal demo --data: the model is SCRIPTED (no LLM is called, no API key needed).\n" +
  "It reads sales.csv with pandas, crashes on a wrong column, gets fixed, and saves out/chart.png.";

/** The scripted model a demo run was started with, found again from its task on resume. */
export function scriptedDemoModelFor(task: string | undefined): ScriptedChatModel {
  return task === DATA_DEMO_TASK ? createDataDemoModel() : createDemoModel();
}
