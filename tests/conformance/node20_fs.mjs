// node:fs with the globSync of Node 22, enough for the conformance CLI's `**/checks.json`:
// `**/`, `*` and `?` patterns, relative to `cwd`, paths returned relative and '/'-separated.
import fs from "node:fs";
import path from "node:path";

export * from "node:fs";
export default fs;

function toRegExp(pattern) {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*" && pattern[i + 1] === "*") {
      const slash = pattern[i + 2] === "/";
      out += slash ? "(?:.*/)?" : ".*";
      i += slash ? 2 : 1;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else out += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const patterns = (Array.isArray(pattern) ? pattern : [pattern]).map(toRegExp);
  const found = [];
  const walk = (rel) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(cwd, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (patterns.some((re) => re.test(child))) found.push(child);
      if (entry.isDirectory()) walk(child);
    }
  };
  walk("");
  return found;
}
