/* app.js — the edged page: loads the catalogues, sends /v1/filter and /v1/compare, draws results,
 * shows the before/after divider and the last request as a curl command. */
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  // The stages of a request in the order it goes through them (the API's timings_ms fields).
  const STAGES = ['decode', 'queue', 'upload', 'kernel', 'download', 'encode'];
  const SVG = 'http://www.w3.org/2000/svg'; // the SVG namespace name, not a fetch

  const state = {
    filters: [], variants: [], file: null, busy: false, ready: false,
    inputUrl: null, resultUrl: null, lastCompare: null, lastRequest: null,
  };

  /* ---- API key ------------------------------------------------------------------------------ */

  // The key lives in this tab's sessionStorage (gone when the tab closes) and goes out as
  // `Authorization: Bearer KEY` on every API call. Storage can be off (privacy settings): the
  // key then lives in memory only.
  const KEY_STORE = 'edged.apiKey';
  let memoryKey = '';

  function apiKey() {
    try {
      return sessionStorage.getItem(KEY_STORE) || '';
    } catch (_) {
      return memoryKey;
    }
  }

  function storeKey(key) {
    memoryKey = key;
    try {
      if (key) sessionStorage.setItem(KEY_STORE, key);
      else sessionStorage.removeItem(KEY_STORE);
    } catch (_) { /* memory only */ }
  }

  // fetch with the key, if one is set.
  function api(url, opts) {
    const o = Object.assign({}, opts);
    o.headers = Object.assign({}, o.headers);
    const key = apiKey();
    if (key) o.headers.Authorization = 'Bearer ' + key;
    return fetch(url, o);
  }

  function keyStatus(text, bad) {
    $('key-status').textContent = text;
    $('key-status').classList.toggle('bad', !!bad);
    if (bad) $('api-key').setAttribute('aria-invalid', 'true');
    else $('api-key').removeAttribute('aria-invalid');
  }

  /* ---- errors ------------------------------------------------------------------------------ */

  // An answer of the API: {"error":{"code","message","request_id"}} and the HTTP status.
  class ApiError extends Error {
    constructor(status, code, message, requestId) {
      super(message);
      this.status = status;
      this.code = code;
      this.requestId = requestId;
    }
  }

  async function apiError(resp) {
    const text = await resp.text();
    if (resp.status === 401) return keyError(resp);
    try {
      const e = JSON.parse(text).error;
      if (e && e.message) return new ApiError(resp.status, e.code, e.message, e.request_id);
    } catch (_) { /* not the API's JSON (a proxy?): fall through */ }
    const snippet = text.replace(/\s+/g, ' ').trim().slice(0, 200);
    return new ApiError(resp.status, 'http_' + resp.status,
      'HTTP ' + resp.status + ' ' + resp.statusText + (snippet ? ': ' + snippet : ''),
      resp.headers.get('X-Request-ID'));
  }

  // 401: the key is missing or not one the server has. Says which, at the key field too.
  function keyError(resp) {
    const sent = apiKey() !== '';
    const message = sent ? 'API key rejected: the server does not accept this key; enter another one in the API key field'
      : 'API key required: this server asks for an API key; enter it in the API key field';
    keyStatus(sent ? 'rejected by the server' : 'required by this server', true);
    return new ApiError(401, 'unauthorized', message, resp.headers.get('X-Request-ID'));
  }

  // The message, then code · status · request id, as nodes for an error box.
  function errorNodes(e) {
    const msg = el('span', 'error-message', e && e.message ? e.message : String(e));
    if (e instanceof TypeError) msg.textContent = 'Cannot reach the server (' + e.message + ')';
    if (!(e instanceof ApiError)) return [msg];
    return [msg, el('span', 'error-meta', [e.code, 'HTTP ' + e.status, e.requestId ? 'request ' + e.requestId : '']
      .filter(Boolean).join(' · '))];
  }

  // Shown where the user is looking: under the button just pressed (scrolled into view) and in
  // place of the result it did not produce.
  function showError(e) {
    const box = $('error');
    box.replaceChildren(...errorNodes(e));
    box.hidden = false;
    $('result-error').replaceChildren(...errorNodes(e));
    $('result-error').hidden = false;
    box.scrollIntoView({ block: 'nearest' });
  }

  function clearError() {
    for (const id of ['error', 'result-error']) {
      $(id).hidden = true;
      $(id).replaceChildren();
    }
  }

  async function getJson(url) {
    const resp = await api(url, { headers: { Accept: 'application/json' } });
    if (!resp.ok) throw await apiError(resp);
    return resp.json();
  }

  /* ---- formatting -------------------------------------------------------------------------- */

  function ms(v) {
    if (!(v > 0)) return '0 ms';
    const digits = v < 1 ? 3 : v < 100 ? 2 : 1;
    return v.toFixed(digits) + ' ms';
  }

  function bytes(n) {
    return n < 1024 ? n + ' B' : n < 1048576 ? (n / 1024).toFixed(1) + ' KiB' : (n / 1048576).toFixed(2) + ' MiB';
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /* ---- catalogues: /version, /v1/filters, /v1/variants ---------------------------------------- */

  function showServer(v) {
    const parts = ['backend ' + v.backend, 'device ' + v.device];
    if (v.compute_capability) parts.push('compute ' + v.compute_capability);
    parts.push('edged ' + v.version);
    const info = $('server-info');
    info.replaceChildren();
    parts.forEach((p, i) => {
      if (i) info.append(' · ');
      const [key, ...rest] = p.split(' ');
      info.append(key + ' ', el('strong', null, rest.join(' ')));
    });
    info.dataset.backend = v.backend;
    info.dataset.device = v.device;
  }

  function fillFilters(cat) {
    state.filters = cat.filters;
    const sel = $('filter');
    sel.replaceChildren(...cat.filters.map((f) => new Option(f.name, f.name)));
    sel.value = cat.default || cat.filters[0].name;
    sel.disabled = false;
    filterChanged();
  }

  function fillVariants(cat) {
    state.variants = cat.variants;
    const sel = $('variant');
    sel.replaceChildren(...cat.variants.map((v) => {
      const o = new Option(v.available ? v.name : v.name + ' — unavailable: ' + (v.reason || ''), v.name);
      o.disabled = !v.available;
      return o;
    }));
    const auto = cat.variants.find((v) => v.kind === 'auto' && v.available) || cat.variants.find((v) => v.available);
    if (auto) sel.value = auto.name;
    sel.disabled = false;
    variantChanged();
  }

  const currentFilter = () => state.filters.find((f) => f.name === $('filter').value);
  const currentVariant = () => state.variants.find((v) => v.name === $('variant').value);

  // Shows the knobs the server lists for this filter; the auto choices name the filter's default.
  function filterChanged() {
    const f = currentFilter();
    if (!f) return;
    const knobs = new Set(f.params || []);
    document.querySelectorAll('.knob').forEach((k) => { k.hidden = !knobs.has(k.dataset.knob); });
    $('filter-desc').textContent = f.description || '';
    $('color').options[0].textContent = f.color ? 'auto (' + f.color + ')' : 'auto';
    $('post').options[0].textContent = f.post ? 'auto (' + f.post + ')' : 'auto';
  }

  // Quality is for JPEG and lossy WebP; WebP is lossless unless its box is cleared.
  function formatChanged() {
    const f = $('format').value;
    $('lossless-field').hidden = f !== 'webp';
    $('quality-field').hidden = !(f === 'jpeg' || (f === 'webp' && !$('lossless').checked));
  }

  function variantChanged() {
    const v = currentVariant();
    if (!v) return;
    $('variant-desc').textContent = v.description || '';
    const gpu = v.kind === 'gpu' && Array.isArray(v.block_sides);
    $('block-field').hidden = !gpu;
    if (gpu) {
      $('block').replaceChildren(...v.block_sides.map((b) => new Option(b + ' × ' + b, String(b))));
      $('block').value = String(v.default_block || v.block_sides[0]);
    }
  }

  /* ---- parameters -------------------------------------------------------------------------- */

  const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

  // A number field as a JSON number; empty = not sent (the API's default). Range checks are the
  // API's: its message names the field and the limit.
  function numberField(id) {
    const input = $(id);
    if (input.validity && input.validity.badInput) throw new Error(id + ': not a number');
    const text = input.value.trim();
    if (text === '') return undefined;
    if (!NUMBER.test(text)) throw new Error(id + ": '" + text + "' is not a number");
    return Number(text);
  }

  // Taps: a JSON array of rows, or one row per line (or ';') with numbers split by spaces/commas.
  function parseTaps(text) {
    text = text.trim();
    if (text === '') return undefined; // the API says that this filter needs taps
    if (text[0] === '[') {
      try {
        return JSON.parse(text);
      } catch (e) {
        throw new Error('taps: invalid JSON (' + e.message + ')');
      }
    }
    return text.split(/[\n;]+/).map((line) => line.trim()).filter((line) => line !== '').map((line, r) =>
      line.split(/[\s,]+/).filter((t) => t !== '').map((t, c) => {
        if (!NUMBER.test(t)) throw new Error('taps: row ' + (r + 1) + ', item ' + (c + 1) + ": '" + t + "' is not a number");
        return Number(t);
      }));
  }

  // The pipeline textarea: undefined when empty, else its JSON array of steps.
  function parseOps(text) {
    text = text.trim();
    if (text === '') return undefined;
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new Error('pipeline: invalid JSON (' + e.message + ')');
    }
  }

  // The JSON `params` part. compare takes no variant (it runs them all).
  function collectParams(forCompare) {
    const f = currentFilter();
    const knobs = new Set(f.params || []);
    const p = { filter: f.name };
    const set = (key, value) => { if (value !== undefined) p[key] = value; };

    if (knobs.has('threshold')) set('threshold', numberField('threshold'));
    if (knobs.has('size')) set('size', numberField('size'));
    if (knobs.has('sigma')) set('sigma', numberField('sigma'));
    if (knobs.has('taps')) set('taps', parseTaps($('taps').value));
    if (knobs.has('normalize') && $('normalize').checked) p.normalize = true;
    if (knobs.has('post') && $('post').value !== 'auto') p.post = $('post').value;
    if (!forCompare && knobs.has('bit_depth') && $('bit_depth').checked) p.bit_depth = 1;
    if (knobs.has('low')) p.low = Number($('low').value);
    if (knobs.has('high')) p.high = Number($('high').value);
    if (knobs.has('aperture')) p.aperture = Number($('aperture').value);
    if (knobs.has('l2gradient') && $('l2gradient').checked) p.l2gradient = true;
    if (knobs.has('value')) set('value', numberField('value'));
    p.border = $('border').value;
    p.color = $('color').value;
    const ops = parseOps($('ops').value);
    if (ops) { // a pipeline: the steps carry the filters and their knobs (the API refuses them beside ops)
      const bitDepth = p.bit_depth;
      Object.keys(p).forEach((k) => { delete p[k]; });
      p.ops = ops;
      if (bitDepth) p.bit_depth = bitDepth;
    }
    // compare encodes no image: it takes no output options (the API refuses them)
    if (!forCompare && $('format').value !== 'png') {
      p.format = $('format').value;
      if (p.format === 'jpeg' || !$('lossless').checked) p.quality = numberField('quality');
    }
    if (!forCompare) {
      const v = currentVariant();
      p.variant = v.name;
      if (!$('block-field').hidden) p.block = Number($('block').value);
    }
    return p;
  }

  function formFor(params) {
    const body = new FormData();
    body.append('image', state.file, state.file.name || 'image.png');
    body.append('params', JSON.stringify(params));
    return body;
  }

  /* ---- input ------------------------------------------------------------------------------- */

  function setFile(file) {
    if (!file) return;
    state.file = file;
    $('file-name').textContent = (file.name || 'image') + ' · ' + bytes(file.size);
    if (state.inputUrl) URL.revokeObjectURL(state.inputUrl);
    state.inputUrl = URL.createObjectURL(file);
    const img = $('input-img');
    img.hidden = false;
    img.src = state.inputUrl;
    $('input-cap').textContent = 'input: loading…';
    clearResults();
    clearError();
    updateButtons();
  }

  function clearResults() {
    $('ba').hidden = true;
    $('result-img').hidden = true;
    $('result-img').removeAttribute('src');
    $('result-cap').textContent = 'result: none yet';
    $('download').hidden = true;
    $('timings').hidden = true;
    $('comparison').hidden = true;
    state.lastCompare = null;
  }

  function fitImage(img) {
    img.classList.toggle('pixelated', img.naturalWidth > 0 && img.naturalWidth < img.clientWidth);
  }

  // A generated test card, for trying the page without a PNG at hand.
  function sampleImage() {
    const c = document.createElement('canvas');
    c.width = 320;
    c.height = 200;
    const g = c.getContext('2d');
    const grad = g.createLinearGradient(0, 0, 320, 200);
    grad.addColorStop(0, '#1d3557');
    grad.addColorStop(1, '#e9c46a');
    g.fillStyle = grad;
    g.fillRect(0, 0, 320, 200);
    g.fillStyle = '#e63946';
    g.beginPath();
    g.arc(90, 100, 55, 0, 2 * Math.PI);
    g.fill();
    g.fillStyle = '#f1faee';
    g.fillRect(170, 40, 110, 70);
    g.strokeStyle = '#2a9d8f';
    g.lineWidth = 8;
    g.strokeRect(190, 120, 100, 55);
    for (let x = 20; x < 320; x += 24) {
      g.fillStyle = x % 48 ? '#000' : '#fff';
      g.fillRect(x, 182, 12, 12);
    }
    c.toBlob((blob) => setFile(new File([blob], 'sample.png', { type: 'image/png' })), 'image/png');
  }

  /* ---- busy state -------------------------------------------------------------------------- */

  function updateButtons() {
    const ok = state.ready && state.file && !state.busy;
    $('run').disabled = !ok;
    $('compare').disabled = !ok;
  }

  async function busy(label, work) {
    clearError();
    state.busy = true;
    $('busy').textContent = label;
    $('controls').setAttribute('aria-busy', 'true');
    updateButtons();
    try {
      await work();
    } catch (e) {
      showError(e);
    } finally {
      state.busy = false;
      $('busy').textContent = '';
      $('controls').removeAttribute('aria-busy');
      updateButtons();
    }
  }

  /* ---- POST /v1/filter --------------------------------------------------------------------- */

  // "queue;dur=0.019, decode;dur=0.328, ..." -> {queue: 0.019, decode: 0.328, ...}; null if absent.
  function parseServerTiming(header) {
    if (!header) return null;
    const t = {};
    header.split(',').forEach((entry) => {
      const [name, ...params] = entry.trim().split(';');
      const dur = params.map((s) => s.trim()).find((s) => s.startsWith('dur='));
      if (name && dur) t[name.trim()] = Number(dur.slice(4));
    });
    return 'total' in t ? t : null;
  }

  // One request: the PNG, with the stage times of that very request from its Server-Timing header
  // (the same numbers as the JSON result's timings_ms). Only when a proxy dropped the header does
  // the page ask again with output=json.
  async function runFilter() {
    const params = collectParams(false);
    remember('v1/filter', params, 'image/png');
    const resp = await api('v1/filter', { method: 'POST', body: formFor(params), headers: { Accept: 'image/png' } });
    if (!resp.ok) throw await apiError(resp);
    const blob = await resp.blob();
    let times = parseServerTiming(resp.headers.get('Server-Timing'));
    const meta = { variant: resp.headers.get('X-Edged-Variant'), id: resp.headers.get('X-Request-ID'), size: blob.size };
    if (!times) {
      const again = await api('v1/filter', {
        method: 'POST', body: formFor(Object.assign({}, params, { output: 'json' })),
        headers: { Accept: 'application/json' },
      });
      if (!again.ok) throw await apiError(again);
      times = (await again.json()).timings_ms;
    }
    await showResult(blob, meta, params);
    drawTimings(times);
    keyAccepted();
  }

  async function showResult(blob, meta, params) {
    if (state.resultUrl) URL.revokeObjectURL(state.resultUrl);
    state.resultUrl = URL.createObjectURL(blob);
    const img = $('result-img');
    img.hidden = false;
    img.src = state.resultUrl;
    try {
      await img.decode();
    } catch (_) {
      throw new Error('the result is not a displayable image');
    }
    fitImage(img);
    img.alt = (params.filter || 'pipeline') + ' result';
    $('result-cap').textContent = 'result: ' + img.naturalWidth + ' × ' + img.naturalHeight + ' · ' + (params.filter || 'pipeline') +
      ' · variant ' + (meta.variant || '?') + ' · ' + bytes(meta.size) + (meta.id ? ' · request ' + meta.id : '');
    const a = $('download');
    a.href = state.resultUrl;
    a.download = resultName(params);
    a.hidden = false;
    showBeforeAfter();
  }

  const resultName = (params) => (state.file.name || 'image').replace(/\.(png|jpe?g|webp)$/i, '') + '-' +
    (params.filter || 'pipeline') + ({ jpeg: '.jpg', webp: '.webp' }[params.format] || '.png');

  /* ---- before / after ------------------------------------------------------------------------ */

  // The result lies over the input, clipped to the right of the divider at pos percent.
  function setDivider(pos) {
    pos = Math.min(100, Math.max(0, pos));
    $('ba-after').style.clipPath = 'inset(0 0 0 ' + pos + '%)';
    $('ba-divider').style.left = pos + '%';
    $('ba-pos').value = String(Math.round(pos));
  }

  function showBeforeAfter() {
    $('ba-before').src = state.inputUrl;
    $('ba-after').src = state.resultUrl;
    $('ba').hidden = false;
    setDivider(Number($('ba-pos').value));
  }

  function wireBeforeAfter() {
    const frame = $('ba-frame');
    const follow = (e) => {
      const r = frame.getBoundingClientRect();
      if (r.width > 0) setDivider((100 * (e.clientX - r.left)) / r.width);
    };
    frame.addEventListener('pointerdown', (e) => {
      frame.setPointerCapture(e.pointerId);
      frame.classList.add('dragging');
      follow(e);
    });
    frame.addEventListener('pointermove', (e) => { if (frame.hasPointerCapture(e.pointerId)) follow(e); });
    ['pointerup', 'pointercancel'].forEach((t) => frame.addEventListener(t, () => frame.classList.remove('dragging')));
    $('ba-pos').addEventListener('input', (e) => setDivider(Number(e.target.value)));
    [$('ba-before'), $('ba-after')].forEach((img) => img.addEventListener('load', () => fitImage(img)));
  }

  /* ---- copy as curl ------------------------------------------------------------------------ */

  // Single-quoted for a POSIX shell: nothing inside is expanded.
  const shq = (s) => "'" + String(s).replace(/'/g, "'\\''") + "'";

  function remember(path, params, accept) {
    state.lastRequest = { url: new URL(path, document.baseURI).href, params, accept, keyed: apiKey() !== '',
      file: state.file.name || 'image.png', type: state.file.type || 'image/png',
      out: accept === 'image/png' ? resultName(params) : '' };
    $('curl').hidden = false;
    $('curl-text').hidden = true;
    $('curl-status').textContent = '';
  }

  // The request just sent, as a curl command: the same multipart parts (the image from a local
  // file of the same name) and the same params JSON. The key is a variable, never the key itself.
  function curlLine(q) {
    // curl -F reads ';' ',' and '"' in a file name as syntax unless the name is quoted
    const file = /[;,"\\]/.test(q.file) ? '"' + q.file.replace(/["\\]/g, '\\$&') + '"' : q.file;
    const lines = ['curl -sS ' + shq(q.url)];
    if (q.keyed) lines.push('-H "Authorization: Bearer $EDGED_API_KEY"');
    lines.push('-H ' + shq('Accept: ' + q.accept), '-F ' + shq('image=@' + file + ';type=' + q.type),
      '--form-string ' + shq('params=' + JSON.stringify(q.params)));
    if (q.out) lines.push('-o ' + shq(q.out));
    return lines.join(' \\\n  ');
  }

  async function copyCommand() {
    if (!state.lastRequest) return;
    const box = $('curl-text');
    box.value = curlLine(state.lastRequest);
    box.hidden = false;
    box.select();
    try {
      await navigator.clipboard.writeText(box.value);
      $('curl-status').textContent = 'copied to the clipboard';
    } catch (_) {
      // no clipboard access (an http:// page other than localhost, or denied): the text is selected
      $('curl-status').textContent = 'press Ctrl+C (⌘C) to copy the selected command';
    }
  }

  function drawTimings(t) {
    const stages = STAGES.map((s) => [s, Number(t[s]) || 0]);
    const sum = stages.reduce((a, [, v]) => a + v, 0);
    const total = Math.max(Number(t.total) || 0, sum);
    // what the stages do not cover: multipart parsing, validation, sending
    if (total - sum > 0.0005) stages.push(['other', total - sum]);
    const bar = $('timing-bar');
    const legend = $('timing-legend');
    bar.replaceChildren();
    legend.replaceChildren();
    for (const [name, v] of stages) {
      const pct = total > 0 ? (100 * v) / total : 0;
      if (v > 0) {
        const seg = el('span', 'seg stage-' + name);
        seg.dataset.stage = name;
        seg.style.width = pct + '%';
        seg.title = name + ' ' + ms(v) + ' (' + pct.toFixed(1) + '%)';
        bar.append(seg);
      }
      const li = el('li');
      li.dataset.stage = name;
      li.append(el('span', 'swatch stage-' + name), el('span', 'stage-name', name), el('span', 'stage-ms', ms(v)),
        el('span', 'stage-pct muted', pct.toFixed(1) + '%'));
      legend.append(li);
    }
    bar.setAttribute('aria-label', 'time per stage: ' + stages.map(([n, v]) => n + ' ' + ms(v)).join(', '));
    $('timing-total').textContent = 'total ' + ms(total) + ' on the server, from the first byte to the answer';
    $('timings').hidden = false;
  }

  /* ---- POST /v1/compare -------------------------------------------------------------------- */

  async function runCompare() {
    const params = collectParams(true);
    remember('v1/compare', params, 'application/json');
    const resp = await api('v1/compare', { method: 'POST', body: formFor(params), headers: { Accept: 'application/json' } });
    if (!resp.ok) throw await apiError(resp);
    state.lastCompare = await resp.json();
    keyAccepted();
    drawCompare();
  }

  function drawCompare() {
    const c = state.lastCompare;
    if (!c) return;
    const rows = c.rows || [];
    const chart = $('compare-chart');
    $('comparison').hidden = false;
    $('compare-info').textContent = c.filter + ' on ' + c.width + ' × ' + c.height + ' · backend ' + c.backend +
      ' · ' + c.device + ' · Δ = largest difference from cpu_serial (0..255)';
    const width = Math.max(280, chart.clientWidth || 600);
    const labelW = Math.min(130, Math.round(width * 0.32));
    const valueW = 118;
    const rowH = 26;
    const plotW = Math.max(40, width - labelW - valueW - 8);
    const times = rows.map((r) => Math.max(0, Number(r.kernel_ms) || 0));
    const max = Math.max(...times, 1e-6);
    const positive = times.filter((v) => v > 0);
    const min = positive.length ? Math.min(...positive) : max;
    const log = $('log-scale').checked;
    const lo = min / 2;
    const scale = (v) => !(v > 0) ? 0 : log ? Math.log(v / lo) / Math.log(max / lo) : v / max;
    const fastest = positive.length ? Math.min(...positive) : -1;
    const root = svg('svg', {
      width, height: rows.length * rowH + 4, viewBox: '0 0 ' + width + ' ' + (rows.length * rowH + 4),
      role: 'img', 'aria-label': 'kernel time per variant: ' +
        rows.map((r, i) => r.variant + ' ' + ms(times[i])).join(', '),
    });
    rows.forEach((r, i) => {
      const y = i * rowH + 2;
      const w = Math.max(2, scale(times[i]) * plotW);
      root.append(svg('text', { x: labelW - 6, y: y + rowH / 2 + 4, 'text-anchor': 'end', class: 'clabel' }, r.variant));
      const bar = svg('rect', {
        x: labelW, y: y + 3, width: w, height: rowH - 8, rx: 3,
        class: 'cbar' + (times[i] === fastest ? ' fastest' : ''), 'data-variant': r.variant,
      });
      bar.append(svg('title', {}, r.variant + ': ' + ms(times[i]) + ', ' + r.gflops + ' GFLOP/s, ' +
        r.effective_gbps + ' GB/s, Δ ' + r.max_abs_diff_vs_cpu_serial));
      root.append(bar);
      root.append(svg('text', { x: labelW + w + 6, y: y + rowH / 2 + 4, class: 'cvalue' },
        ms(times[i]) + '  Δ' + r.max_abs_diff_vs_cpu_serial));
    });
    chart.replaceChildren(root);
    const skipped = $('compare-skipped');
    skipped.replaceChildren(...(c.skipped || []).map((s) => {
      const li = el('li');
      li.append(el('strong', null, s.variant), ': ' + s.message);
      return li;
    }));
  }

  /* ---- wiring ------------------------------------------------------------------------------ */

  function wire() {
    $('file').addEventListener('change', (e) => setFile(e.target.files[0]));
    $('sample').addEventListener('click', sampleImage);
    const drop = $('drop');
    ['dragenter', 'dragover'].forEach((t) => drop.addEventListener(t, (e) => {
      e.preventDefault();
      drop.classList.add('over');
    }));
    ['dragleave', 'drop'].forEach((t) => drop.addEventListener(t, () => drop.classList.remove('over')));
    drop.addEventListener('drop', (e) => {
      e.preventDefault();
      if (e.dataTransfer && e.dataTransfer.files.length) setFile(e.dataTransfer.files[0]);
    });
    $('input-img').addEventListener('load', (e) => {
      fitImage(e.target);
      $('input-cap').textContent = 'input: ' + e.target.naturalWidth + ' × ' + e.target.naturalHeight;
    });
    $('input-img').addEventListener('error', (e) => {
      if (!e.target.getAttribute('src')) return;
      e.target.hidden = true;
      $('input-cap').textContent = 'input: the browser cannot show this file; the server will say why';
    });
    $('filter').addEventListener('change', filterChanged);
    // Canny's sliders show their value; low never passes high (the API refuses low > high).
    ['low', 'high'].forEach((id) => $(id).addEventListener('input', () => {
      const low = $('low'), high = $('high');
      if (Number(low.value) > Number(high.value)) (id === 'low' ? high : low).value = $(id).value;
      $('low-value').textContent = low.value;
      $('high-value').textContent = high.value;
    }));
    $('variant').addEventListener('change', variantChanged);
    $('format').addEventListener('change', formatChanged);
    $('lossless').addEventListener('change', formatChanged);
    $('controls').addEventListener('submit', (e) => {
      e.preventDefault();
      if (!$('run').disabled) busy('Filtering…', runFilter);
    });
    $('compare').addEventListener('click', () => busy('Running every variant…', runCompare));
    $('log-scale').addEventListener('change', drawCompare);
    $('copy-curl').addEventListener('click', copyCommand);
    $('key-use').addEventListener('click', useKey);
    $('api-key').addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        useKey();
      }
    });
    $('key-forget').addEventListener('click', () => {
      $('api-key').value = '';
      useKey();
    });
    wireBeforeAfter();
    let resizeTimer = 0;
    window.addEventListener('resize', () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => {
        drawCompare();
        fitImage($('input-img'));
        fitImage($('result-img'));
        [$('ba-before'), $('ba-after')].forEach(fitImage);
      }, 150);
    });
  }

  // A header can carry visible ASCII only; anything else would make fetch throw a TypeError that
  // reads like a network failure.
  function useKey() {
    const key = $('api-key').value.trim();
    if (key && !/^[\x21-\x7e]+$/.test(key)) {
      keyStatus('a key is visible ASCII without spaces: this one cannot be sent', true);
      return;
    }
    storeKey(key);
    keyStatus(key ? 'key set for this tab' : 'no key', false);
    clearError();
    loadCatalogues();
  }

  function keyAccepted() {
    if (apiKey()) keyStatus('key accepted', false);
  }

  async function loadCatalogues() {
    try {
      const [version, filters, variants] = await Promise.all([getJson('version'), getJson('v1/filters'),
        getJson('v1/variants')]);
      showServer(version);
      fillFilters(filters);
      fillVariants(variants);
      keyAccepted();
      state.ready = true;
      document.body.dataset.ready = 'true';
    } catch (e) {
      const up = e instanceof ApiError && e.status === 401;
      $('server-info').textContent = up ? 'server is up; ' + e.message.split(':')[0] : 'server not reachable';
      state.ready = false;
      delete document.body.dataset.ready;
      showError(e);
      if (up) $('api-key').focus();
    }
    updateButtons();
  }

  function init() {
    wire();
    $('api-key').value = apiKey();
    loadCatalogues();
  }

  init();
})();
