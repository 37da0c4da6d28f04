// Node 20 lacks fs.globSync (added in Node 22). The conformance CLI imports it by name, so it
// fails to load on Node 20, although it only calls it to read its own results
// (`**/checks.json`), never inside a scenario. Preloaded with `node --import`, this registers a
// resolve hook that hands the CLI (and only it) an `fs` with a small globSync added.
import { register } from "node:module";

if (typeof (await import("node:fs")).globSync !== "function") {
  register("./node20_fs_hooks.mjs", import.meta.url);
}
