// The resolve hook of node20_shim.mjs: `fs` imported from the conformance package resolves to
// node20_fs.mjs (all of node:fs plus globSync).
const shim = new URL("./node20_fs.mjs", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/@modelcontextprotocol/conformance/")) {
    return { url: shim, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
