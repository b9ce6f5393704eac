// Compares two OpenAPI documents (JSON files) with api-smart-diff, which classifies each change
// as breaking, non-breaking, deprecated, annotation or unclassified by its OpenAPI 3 rules, and
// prints the changes as one JSON array. harness/compat.py reads it; the classification is the
// tool's. Usage: node compat.cjs <node_modules> <released.json> <working.json>
"use strict";
const fs = require("fs");
const path = require("path");
const [modules, released, working] = process.argv.slice(2);
const { apiCompare } = require(path.join(modules, "api-smart-diff"));
const read = (file) => JSON.parse(fs.readFileSync(file, "utf8"));
const { diffs } = apiCompare(read(released), read(working));
const shown = (value) => (value === undefined || typeof value === "object" ? null : value);
const changes = diffs.map((diff) => ({
  type: diff.type,
  action: diff.action,
  path: diff.path.map(String),
  before: shown(diff.before),
  after: shown(diff.after),
}));
process.stdout.write(JSON.stringify(changes));
