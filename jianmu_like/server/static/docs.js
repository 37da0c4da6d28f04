// The API's docs page: lists every route of /openapi.json (method, path, summary, parameters,
// request and response models with their fields). Plain JavaScript, nothing loaded from
// elsewhere; every piece of the document reaches the page through textContent.
"use strict";

(() => {
  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const refName = (schema) => (schema && schema.$ref ? schema.$ref.split("/").pop() : null);

  function typeOf(schema) {
    if (!schema) return "";
    if (schema.$ref) return refName(schema);
    if (schema.anyOf) return schema.anyOf.map(typeOf).join(" | ");
    if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
    if (schema.const !== undefined) return JSON.stringify(schema.const);
    if (schema.type === "array") return `${typeOf(schema.items) || "any"}[]`;
    return schema.type || "any";
  }

  function modelBox(label, name, schemas) {
    const box = el("div", "model");
    box.append(el("div", "label", `${label}: ${name}`));
    const schema = schemas[name];
    if (!schema || !schema.properties) return box;
    const required = new Set(schema.required || []);
    const list = el("ul", "fields");
    for (const [field, spec] of Object.entries(schema.properties)) {
      const item = el("li");
      item.append(el("code", null, field + (required.has(field) ? "" : "?")), el("span", "muted", ` ${typeOf(spec)}`));
      list.append(item);
    }
    box.append(list);
    return box;
  }

  function operation(method, path, op, schemas) {
    const card = el("section", "route");
    card.dataset.method = method.toUpperCase();
    card.dataset.path = path;
    const head = el("div", "head");
    head.append(el("span", "badge method", method.toUpperCase()), el("code", "path", path), el("span", "muted", op.summary));
    card.append(head);
    const params = (op.parameters || []).map((p) => `${p.name} (${p.in})`);
    if (params.length) card.append(el("div", "muted", `parameters: ${params.join(", ")}`));
    const body = refName(op.requestBody?.content?.["application/json"]?.schema);
    if (body) card.append(modelBox("request", body, schemas));
    for (const [status, answer] of Object.entries(op.responses || {})) {
      if (Number(status) >= 400) continue;
      const [media, content] = Object.entries(answer.content || {})[0] || [];
      const name = refName(content?.schema);
      card.append(name ? modelBox(`response ${status}`, name, schemas) : el("div", "label", `response ${status}: ${media}`));
    }
    const refusals = Object.keys(op.responses || {}).filter((s) => Number(s) >= 400);
    card.append(el("div", "muted", `refusals (ErrorBody): ${refusals.join(", ")}`));
    return card;
  }

  async function load() {
    const main = document.getElementById("routes");
    try {
      const response = await fetch("/openapi.json");
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      const doc = await response.json();
      document.getElementById("api-version").textContent = `${doc.info.title} ${doc.info.version} · OpenAPI ${doc.openapi}`;
      const schemas = doc.components?.schemas || {};
      main.replaceChildren();
      // The API only: the console's own files (its page, scripts, style) are routes of the
      // document (tag "console") but not part of the API; they are named in one line below.
      const files = [];
      for (const [path, methods] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(methods)) {
          if ((op.tags || []).includes("console")) files.push(path);
          else main.append(operation(method, path, op, schemas));
        }
      }
      if (files.length) main.append(el("p", "muted console-files", `Not listed: the console's own files (${files.join(", ")}).`));
    } catch (error) {
      main.replaceChildren(el("p", "error", `could not read /openapi.json: ${error.message}`));
    }
  }

  load();
})();
