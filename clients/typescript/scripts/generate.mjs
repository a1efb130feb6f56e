// Writes src/openapi.ts: the gateway's OpenAPI document as TypeScript types (openapi-typescript).
//
//   npm run generate                                   # from a gateway on 127.0.0.1:7700
//   npm run generate -- http://127.0.0.1:PORT/openapi.json
//   npm run generate -- saved-openapi.json [out.ts]     # paths are relative to clients/typescript
//
// Generate against a gateway started with no provider keys, plugins or airlock.toml: the document
// is fitted to the gateway that serves it (its `tools` and `model` enums). The test suite checks
// that the committed file is what the gateway under test generates.
import { writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const [source = "http://127.0.0.1:7700/openapi.json", out = "src/openapi.ts"] = process.argv.slice(2);
const url = /^https?:\/\//.test(source) ? new URL(source) : pathToFileURL(source);

// The document describes free-form objects (`usage`, `events`, `details`) as bare `{type: object}`;
// by default those become `Record<string, never>`, which no real value fits.
const ast = await openapiTS(url, { emptyObjectsUnknown: true });
const banner = "// Generated from the gateway's /openapi.json by `npm run generate`; do not edit.\n\n";
await writeFile(out, banner + astToString(ast));
console.error(`wrote ${out} from ${source}`);
