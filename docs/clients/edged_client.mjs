// edged_client.mjs — a client of the edged HTTP API with fetch, for Node 18+ and browsers alike:
// the API key, the JSON error body, bounded retries on 429 and 503 that honour Retry-After, and the
// answer (the filtered image, PNG, JPEG or WebP, or the JSON result).
//
//   node edged_client.mjs URL INPUT OUTPUT [--param NAME=VALUE]... [--json] [--key KEY] [--retries N]
//
// INPUT is a PNG, JPEG or WebP (the server tells them from the bytes); OUTPUT is a PNG, or a JPEG or
// WebP with --param format=jpeg or format=webp. --help prints the usage.
// --param values are JSON where they parse as JSON (size=9), text otherwise (filter=gaussian). The
// key may come from EDGED_API_KEY. OUTPUT `-` with --json prints the result. Exit status: 0 done,
// 1 an error answer or no answer (`edged: STATUS CODE: MESSAGE (request ID)` on stderr), 2 bad usage.
// In a browser: import { filterImage } from './edged_client.mjs' and pass a File, Blob or bytes.

const RETRY_STATUSES = [429, 503]; // queue full; draining, not ready, out of memory: worth another try

/** An error answer: the HTTP status and the code, message and request id of its JSON body. */
export class EdgedError extends Error {
  constructor(status, code, message, requestId) {
    super(`${status} ${code}: ${message} (request ${requestId})`);
    Object.assign(this, { status, code, detail: message, requestId });
  }
}

/** The EdgedError of a non-200 answer; a body that is not edged's JSON error still gives one. */
export async function errorOf(res) {
  const text = await res.text();
  try {
    const e = JSON.parse(text).error;
    return new EdgedError(res.status, e.code, e.message, e.request_id);
  } catch {
    return new EdgedError(res.status, `http_${res.status}`, text.slice(0, 200), res.headers.get('X-Request-ID') ?? '-');
  }
}

/** Seconds to wait before retry number attempt+1: at least the server's Retry-After, growing
 *  exponentially from base with each attempt, never more than cap. */
export function retryDelay(res, attempt, base = 0.5, cap = 30) {
  const after = Number(res.headers.get('Retry-After')) || 0;
  return Math.min(Math.max(after, base * 2 ** attempt), cap);
}

/** Filters image (a PNG, JPEG or WebP as a Blob, File, ArrayBuffer or Uint8Array) on the edged
 *  server at url with params (an object of request parameters). Resolves to the filtered image's
 *  bytes (Uint8Array: PNG, or JPEG or WebP with params.format 'jpeg' or 'webp'), or with output
 *  'json' to the JSON result. Retries up to `retries` times on 429/503; rejects with EdgedError for
 *  an error answer, with fetch's TypeError when no answer came. */
export async function filterImage(url, image, { params = {}, key, output = 'png', retries = 4, log } = {}) {
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  const blob = image instanceof Blob ? image : new Blob([image]); // the server sniffs the format
  for (let attempt = 0; ; attempt++) {
    const form = new FormData();
    form.append('image', blob, 'image');
    form.append('params', JSON.stringify({ ...params, output }));
    const res = await fetch(url.replace(/\/+$/, '') + '/v1/filter', { method: 'POST', headers, body: form });
    if (res.ok) return output === 'json' ? res.json() : new Uint8Array(await res.arrayBuffer());
    const err = await errorOf(res);
    if (!RETRY_STATUSES.includes(res.status) || attempt >= retries) throw err;
    const delay = retryDelay(res, attempt);
    log?.(`edged: ${err.message}; retry ${attempt + 1} of ${retries} in ${delay.toFixed(1)} s`);
    await new Promise((resolve) => setTimeout(resolve, delay * 1000));
  }
}

const USAGE = `usage: edged_client.mjs URL INPUT OUTPUT [--param NAME=VALUE]... [--json] [--key KEY] [--retries N]

Filter an image (PNG, JPEG or WebP) with an edged server; the result is a PNG, a JPEG or WebP with
--param format=jpeg or format=webp, or the JSON report with --json.

  URL                 the server, e.g. http://localhost:8080
  INPUT               the PNG, JPEG or WebP to filter
  OUTPUT              where to write the image (or the JSON result with --json; - prints it)
  --param NAME=VALUE  a request parameter, e.g. filter=gaussian, size=9, format=jpeg (JSON values as JSON)
  --json              ask for the JSON result instead of the image
  --key KEY           API key (default $EDGED_API_KEY)
  --retries N         retries on 429/503 (default 4)
  -h, --help          print this and exit`;

function parseArgs(argv) {
  const args = { positional: [], params: {}, json: false, key: process.env.EDGED_API_KEY, retries: 4 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') return { help: true };
    if (a === '--json') args.json = true;
    else if (a === '--key') args.key = argv[++i];
    else if (a === '--retries') args.retries = Number(argv[++i]);
    else if (a === '--param') {
      const [name, ...rest] = (argv[++i] ?? '').split('=');
      if (!name || rest.length === 0) throw new Error(`--param: expected NAME=VALUE, got '${argv[i]}'`);
      const value = rest.join('=');
      try { args.params[name] = JSON.parse(value); } catch { args.params[name] = value; }
    } else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else args.positional.push(a);
  }
  if (args.positional.length !== 3 || !Number.isInteger(args.retries) || args.retries < 0)
    throw new Error(USAGE.split('\n')[0]);
  return args;
}

async function main(argv) {
  const { readFile, writeFile } = await import('node:fs/promises');
  let args;
  try {
    args = parseArgs(argv);
  } catch (e) {
    console.error(`edged_client: ${e.message}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const [url, input, output] = args.positional;
  let got;
  try {
    got = await filterImage(url, await readFile(input), {
      params: args.params, key: args.key, output: args.json ? 'json' : 'png', retries: args.retries,
      log: (line) => console.error(line),
    });
  } catch (e) {
    console.error(`edged: ${e instanceof EdgedError ? e.message : `no answer from ${url}: ${e.cause?.message ?? e.message}`}`);
    return 1;
  }
  if (args.json && output === '-') console.log(JSON.stringify(got, null, 2));
  else await writeFile(output, args.json ? JSON.stringify(got, null, 2) : got);
  return 0;
}

// Run as a program under Node; imported (Node or a browser), it only exports.
if (globalThis.process?.argv?.[1] &&
    import.meta.url === (await import('node:url')).pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
