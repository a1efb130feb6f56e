// slugify-js: an Airlock tool plugin written in JavaScript, built with `jco componentize`
// (ComponentizeJS, the StarlingMonkey engine).
//
// It implements the `tool-plugin` world of wit/plugin/world.wit (package airlock:plugin@0.1.0):
// one tool, `slugify`, that turns a title into a URL slug ("Crème Brûlée, 2nd ed." →
// "creme-brulee-2nd-ed"). Pure and deterministic: no network, no files, no clock.
// Build it with plugins/slugify-js/build.sh; the component is plugins/slugify-js/slugify-js.wasm.
//
// How jco maps the WIT: `tool-spec` is an object with camelCase fields (`parallelSafe`); the
// `result<string, tool-error>` of `call` is the returned string, or the `payload` of what is
// thrown: a `tool-error` variant `{tag: 'bad-arguments', val: '...'}`. Anything else thrown
// (a bare Error) traps, which the host reports as TRAP.

// WIT imports are modules named with the package's version; `log`'s level enum is its name.
import { log } from 'airlock:plugin/log@0.1.0';

const TOOL = 'slugify';
const MAX_SEPARATOR = 8;
// Slugs are for titles and names. The cap bounds a call's cost: StarlingMonkey only interprets
// JS, and each character costs ~20K fuel (see plugin.toml).
const MAX_TEXT = 10_000;

const PROPERTIES = {
  text: { type: 'string', maxLength: MAX_TEXT, description: 'The text to turn into a slug.' },
  separator: {
    type: 'string',
    maxLength: MAX_SEPARATOR,
    description: 'Put between words; no letters or digits. Default "-".',
  },
  lowercase: { type: 'boolean', description: 'Lower-case the slug. Default true.' },
  maxLength: {
    type: 'integer',
    minimum: 1,
    description: 'Longest slug, in characters; cut at a word boundary where one fits.',
  },
};
const PARAMETERS = JSON.stringify({
  type: 'object',
  properties: PROPERTIES,
  required: ['text'],
  additionalProperties: false,
});

// Latin letters with diacritics (Latin-1 Supplement, Latin Extended-A and -B, Latin Extended
// Additional), and the few that do not decompose (ß, æ, ø, ł, þ, ...), spelled in ASCII. A table,
// not String.prototype.normalize: StarlingMonkey is built without ICU, so it has neither
// normalization nor Unicode property escapes (\p{L}) in regular expressions. Generated with
// Node: every such code point whose NFKD form, without combining marks, is ASCII letters.
const SPELLED = {
  A: "ÀÁÂÃÄÅĀĂĄǍǞǠǺȀȂȦḀẠẢẤẦẨẪẬẮẰẲẴẶ",
  a: "àáâãäåāăąǎǟǡǻȁȃȧḁạảấầẩẫậắằẳẵặ",
  "AE": "ÆǼǢ",
  "ae": "æǽǣ",
  B: "ḂḄḆ",
  b: "ḃḅḇ",
  C: "ÇĆĈĊČḈ",
  c: "çćĉċčḉ",
  D: "ĎḊḌḎḐḒĐÐ",
  d: "ďḋḍḏḑḓđð",
  "DZ": "ǄǱ",
  "Dz": "ǅǲ",
  "dz": "ǆǳ",
  E: "ÈÉÊËĒĔĖĘĚȄȆȨḔḖḘḚḜẸẺẼẾỀỂỄỆ",
  e: "èéêëēĕėęěȅȇȩḕḗḙḛḝẹẻẽếềểễệ",
  F: "Ḟ",
  f: "ḟ",
  G: "ĜĞĠĢǦǴḠ",
  g: "ĝğġģǧǵḡ",
  H: "ĤȞḢḤḦḨḪĦ",
  h: "ĥȟḣḥḧḩḫẖħ",
  I: "ÌÍÎÏĨĪĬĮİǏȈȊḬḮỈỊ",
  i: "ìíîïĩīĭįǐȉȋḭḯỉịı",
  "IJ": "Ĳ",
  "ij": "ĳ",
  J: "Ĵ",
  j: "ĵǰ",
  K: "ĶǨḰḲḴ",
  k: "ķǩḱḳḵĸ",
  L: "ĹĻĽḶḸḺḼŁĿ",
  l: "ĺļľḷḹḻḽłŀ",
  "LJ": "Ǉ",
  "Lj": "ǈ",
  "lj": "ǉ",
  M: "ḾṀṂ",
  m: "ḿṁṃ",
  N: "ÑŃŅŇǸṄṆṈṊŊ",
  n: "ñńņňǹṅṇṉṋŋŉ",
  "NJ": "Ǌ",
  "Nj": "ǋ",
  "nj": "ǌ",
  O: "ÒÓÔÕÖŌŎŐƠǑǪǬȌȎȪȬȮȰṌṎṐṒỌỎỐỒỔỖỘỚỜỞỠỢØǾ",
  o: "òóôõöōŏőơǒǫǭȍȏȫȭȯȱṍṏṑṓọỏốồổỗộớờởỡợøǿ",
  "OE": "Œ",
  "oe": "œ",
  P: "ṔṖ",
  p: "ṕṗ",
  R: "ŔŖŘȐȒṘṚṜṞ",
  r: "ŕŗřȑȓṙṛṝṟ",
  S: "ŚŜŞŠȘṠṢṤṦṨ",
  s: "śŝşšſșṡṣṥṧṩẛ",
  "SS": "ẞ",
  "ss": "ß",
  T: "ŢŤȚṪṬṮṰŦ",
  t: "ţťțṫṭṯṱẗŧ",
  "TH": "Þ",
  "th": "þ",
  U: "ÙÚÛÜŨŪŬŮŰŲƯǓǕǗǙǛȔȖṲṴṶṸṺỤỦỨỪỬỮỰ",
  u: "ùúûüũūŭůűųưǔǖǘǚǜȕȗṳṵṷṹṻụủứừửữự",
  V: "ṼṾ",
  v: "ṽṿ",
  W: "ŴẀẂẄẆẈ",
  w: "ŵẁẃẅẇẉẘ",
  X: "ẊẌ",
  x: "ẋẍ",
  Y: "ÝŶŸȲẎỲỴỶỸ",
  y: "ýÿŷȳẏẙỳỵỷỹ",
  Z: "ŹŻŽẐẒẔ",
  z: "źżžẑẓẕ",
};
const FOLD = new Map();
for (const [ascii, letters] of Object.entries(SPELLED)) {
  for (const letter of letters) FOLD.set(letter, ascii);
}
const FOLD_RE = new RegExp(`[${[...FOLD.keys()].join('')}]`, 'gu');

class ToolError extends Error {
  constructor(tag, message) {
    super(message);
    // What ComponentizeJS's bindings return as the `err` of a `result`.
    this.payload = { tag, val: message };
  }
}

const bad = (message) => new ToolError('bad-arguments', message);

function describeValue(value) {
  return (JSON.stringify(value) ?? String(value)).slice(0, 80);
}

/** The arguments, checked against PARAMETERS. */
function parse(argumentsJson) {
  let args;
  try {
    args = JSON.parse(argumentsJson);
  } catch (e) {
    throw bad(`arguments are not valid JSON: ${e.message}`);
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw bad(`arguments must be a JSON object, got ${describeValue(args)}`);
  }
  for (const key of Object.keys(args)) {
    if (!Object.hasOwn(PROPERTIES, key)) {
      throw bad(`unknown property \`${key}\`; the properties are ${Object.keys(PROPERTIES).join(', ')}`);
    }
  }
  if (!('text' in args)) throw bad('missing required property `text` (a string)');
  const { text, separator = '-', lowercase = true, maxLength = null } = args;
  if (typeof text !== 'string') {
    throw bad(`property \`text\` must be a string, got ${describeValue(text)}`);
  }
  if (text.length > MAX_TEXT) {
    throw bad(`property \`text\` has ${text.length} characters, over the ${MAX_TEXT} a slug is made from`);
  }
  if (typeof separator !== 'string' || [...separator].length > MAX_SEPARATOR || /[A-Za-z0-9]/.test(separator)) {
    throw bad(
      `property \`separator\` must be a string of at most ${MAX_SEPARATOR} characters with no ` +
        `letters or digits, got ${describeValue(separator)}`,
    );
  }
  if (typeof lowercase !== 'boolean') {
    throw bad(`property \`lowercase\` must be true or false, got ${describeValue(lowercase)}`);
  }
  if (maxLength !== null && !(Number.isInteger(maxLength) && maxLength >= 1)) {
    throw bad(`property \`maxLength\` must be an integer of at least 1, got ${describeValue(maxLength)}`);
  }
  return { text, separator, lowercase, maxLength };
}

/**
 * The slug of `text`: its words (runs of ASCII letters and digits, once accents are spelled
 * out) joined by `separator`. Lengths are in code points.
 */
function slugify(text, { separator, lowercase, maxLength }) {
  let folded = text
    .replace(/[\u0300-\u036f]+/g, '') // combining accents of already decomposed text
    .replace(FOLD_RE, (letter) => FOLD.get(letter))
    .replace(/['\u2019\u02bc]+/g, ''); // "don't" → "dont", not "don-t"
  if (lowercase) folded = folded.toLowerCase();
  const words = folded.match(/[A-Za-z0-9]+/g) ?? [];
  if (maxLength === null) return words.join(separator);
  const separatorLength = [...separator].length;
  const kept = [];
  let length = 0;
  for (const word of words) {
    const added = kept.length === 0 ? word.length : separatorLength + word.length;
    if (length + added > maxLength) {
      // Not even the first word fits: cut it.
      if (kept.length === 0) kept.push(word.slice(0, maxLength));
      break;
    }
    kept.push(word);
    length += added;
  }
  return kept.join(separator);
}

export function describe() {
  return [
    {
      name: TOOL,
      description:
        'Turns text into a URL slug: accents removed, lower-case ASCII letters and digits, ' +
        'words joined by `separator` ("-"), e.g. "Crème Brûlée, 2nd ed." → ' +
        '"creme-brulee-2nd-ed". Returns JSON {"slug": "..."}.',
      parameters: PARAMETERS,
      parallelSafe: true,
    },
  ];
}

export function call(name, argumentsJson) {
  log('info', `call ${name} (${argumentsJson.length} characters of arguments)`);
  if (name !== TOOL) {
    throw new ToolError('failed', `unknown tool \`${name}\`; this plugin offers \`${TOOL}\``);
  }
  const { text, ...options } = parse(argumentsJson);
  return JSON.stringify({ slug: slugify(text, options) });
}
