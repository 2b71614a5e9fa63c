import { ReducedValue } from "@langchain/langgraph";
import { registry } from "@langchain/langgraph/zod";
import { type ZodObject, type ZodType, z } from "zod";
import { SettingsSchema } from "../core/settings.js";
import { RunInputSchema, State } from "../core/state.js";
import type { IntrospectedDeclaration } from "./build.js";

/**
 * The state as a zod object, field for field from the one StateSchema: each reduced field carries
 * its reducer and update schema in LangGraph's zod registry, every field its default. The dev
 * server (langgraph-api 1.5) reads the context schema only from a graph whose state is not a
 * StateSchema; this declares the same channels in the form it reads. Fields are copied before
 * they are registered, so the schemas State and RunInputSchema share carry no registry entry.
 */
export function registeredState() {
  const shape: Record<string, ZodType> = {};
  for (const [key, field] of Object.entries(State.fields)) {
    if (ReducedValue.isInstance(field)) {
      const value = (field.valueSchema as ZodType).clone();
      registry.add(value, { reducer: { fn: field.reducer, schema: field.inputSchema as ZodType } });
      shape[key] = value;
    } else {
      const value = (field as ZodType).clone();
      registry.add(value, {});
      shape[key] = value;
    }
  }
  return z.object(shape);
}

/**
 * How a graph served to Studio is declared: `createAgent(options, studioDeclaration())` gives any
 * agent (one with extensions too) Studio's input form and settings form, the latter from
 * `settings` (a test gives a schema built from a copy of the setting table).
 */
export function studioDeclaration(settings: ZodObject = SettingsSchema): IntrospectedDeclaration {
  // The input is validated field by field, as the StateSchema validates a code caller's: a
  // Command's update (a resume with `update: { status }`) carries state fields and no task. The
  // context is loose because LangGraph checks `configurable` (thread_id...) against it when a run
  // has no context; the nodes still parse the settings strictly (withSettings), unknown ones included.
  return {
    state: registeredState(),
    input: RunInputSchema.partial().loose(),
    context: settings.loose(),
  };
}
