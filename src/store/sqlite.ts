import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { sqliteLeases } from "./lease.js";
import type { StoreLocation } from "./location.js";
import { isSqliteOutage, StoreWaits } from "./outage.js";
import { PatientCheckpointer } from "./patient-checkpointer.js";
import type { RunStore } from "./run-store.js";
import { openSqliteRunsFile, sqliteRecords } from "./sqlite-file.js";

export function openSqliteStore(location: Extract<StoreLocation, { kind: "sqlite" }>): RunStore {
  const db = openSqliteRunsFile(location.path);
  const waits = new StoreWaits();
  const checkpointer = new PatientCheckpointer(new SqliteSaver(db), {
    isOutage: isSqliteOutage,
    where: location.path,
    waits,
  });
  const leases = sqliteLeases(db);

  return {
    location,
    checkpointer,
    ...sqliteRecords(db),
    lease: leases.lease,
    onWait: (listener) => waits.on(listener),
    patiently: checkpointer.patiently,
    async close() {
      db.close();
    },
  };
}
