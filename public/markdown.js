// Model answers rendered as markdown while they stream, with markdown-it (vendor/, copied
// from the pinned npm package by `make setup`). It is safe by construction as configured
// here: raw HTML is off, so every `<` the model writes is escaped text; links pass only
// with an https URL and open in a new tab without an opener or a referrer; images are off,
// so nothing the model writes loads a resource (`![x](url)` shows as a link). Nothing here
// sets innerHTML from anything but markdown-it's escaped output.
import MarkdownIt from "./vendor/markdown-it.mjs";

// Deeper than this, markdown-it stops parsing and drops the rest of the text, so an answer
// that nests deeper is shown as plain text instead: nothing is lost.
const MAX_NESTING = 40;
// Past this many characters the block still being written is shown, with the whole answer,
// as plain text: its re-render costs time in proportion to it, and hostile input near this
// size costs up to ~0.3 s a render. Finished blocks are rendered once (MarkdownView), so an
// answer may be far longer, up to MAX_ANSWER_CHARS.
export const MAX_RENDERED_CHARS = 100_000;
export const MAX_ANSWER_CHARS = 2_000_000;
// Past this many top-level blocks or parsed tokens too: each block is an element to lay out,
// and 30,000 one-line paragraphs took seconds in Chromium though under the character limit.
const MAX_BLOCKS = 5_000;
const MAX_TOKENS = 50_000;
// A run of combining marks costs the browser's layout time that grows with the square of its
// length (10,000 marks on one letter: a second); more than this many on one character are
// not shown (Copy still copies them).
const MARKS_RUN = /(\p{M}{16})\p{M}+/gu;
// A tail longer than this (a reopened chat's long answer, a burst) is rendered a part at a
// time, each part in a task of its own, each ending at a blank line: a reopened chat of
// several long answers took one task of 880 ms rendered whole.
const PART_CHARS = 16_000;
// While text streams, a render waits at least this many times the last render's duration,
// so rendering takes at most a fifth of the main thread however long the answer grows.
const RENDER_SPACING = 4;
const MIN_RENDER_GAP_MS = 32;

const md = new MarkdownIt("default", { html: false, linkify: false, typographer: false, maxNesting: MAX_NESTING });
md.disable("image");
md.validateLink = (url) => /^https:\/\//i.test(url);

const escape = md.utils.escapeHtml;
const renderToken = (tokens, index, options, env, self) => self.renderToken(tokens, index, options);
md.renderer.rules.link_open = (tokens, index, options, env, self) => {
  tokens[index].attrSet("target", "_blank");
  tokens[index].attrSet("rel", "noopener noreferrer");
  return renderToken(tokens, index, options, env, self);
};
// Code: monospace, never wrapped (it scrolls sideways), with its language and a copy button
// (app.js handles the click).
const codeBlock = (language, code) =>
  `<div class="code-block"><div class="code-bar"><span class="code-language">${escape(language)}</span>` +
  `<button type="button" class="copy-code">Copy</button></div><pre><code>${escape(code)}</code></pre></div>\n`;
md.renderer.rules.fence = (tokens, index) => codeBlock(tokens[index].info.trim().split(/\s+/)[0] || "text", tokens[index].content);
md.renderer.rules.code_block = (tokens, index) => codeBlock("text", tokens[index].content);
// A wide table scrolls inside its own box instead of widening the page.
md.renderer.rules.table_open = () => '<div class="table-scroll"><table>\n';
md.renderer.rules.table_close = () => "</table></div>\n";

/** Each top-level block of `text` ({html, line}: its HTML and its first line), or null
 * when it must be shown as plain text. `env` carries the reference definitions. */
function renderBlocks(text, env) {
  if (text.length > MAX_RENDERED_CHARS) return null;
  const tokens = md.parse(text, env);
  if (tokens.length > MAX_TOKENS) return null;
  const blocks = [];
  let start = 0;
  let depth = 0;
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i].level >= MAX_NESTING - 1) return null;
    depth += tokens[i].nesting;
    if (depth === 0) {
      blocks.push({ html: md.renderer.render(tokens.slice(start, i + 1), md.options, env), line: tokens[start].map?.[0] ?? 0 });
      if (blocks.length > MAX_BLOCKS) return null;
      start = i + 1;
    }
  }
  return blocks;
}

/** Where line `line` of `text` starts (its length when there is no such line). */
function lineStart(text, line) {
  let at = 0;
  for (let n = 0; n < line; n++) {
    const next = text.indexOf("\n", at);
    if (next < 0) return text.length;
    at = next + 1;
  }
  return at;
}

/**
 * The rendered view of one answer. `show(text)` is called with the whole text so far as it
 * grows; renders are spaced out while it streams, and only the blocks that changed are
 * replaced, so earlier blocks (and a selection or a copy button in them) stay as they are.
 * `flush()` renders now (the answer has settled).
 *
 * The work of a render does not grow with the answer: a top-level block that another
 * follows is finished (the text only grows at its end), so it is parsed and rendered once
 * and kept ("frozen"); each render parses only the text from the start of the last block
 * on. A reference definition (`[x]: https://...`) written after the blocks that use it
 * does not reach blocks already frozen: models rarely write them, and the link stays text.
 */
export class MarkdownView {
  /** `keepPlace(render)`: runs a render of a later part (not one `show` or `flush` asked
   * for), so that the page can keep its scroll place around it. */
  constructor(element, { keepPlace = (render) => render() } = {}) {
    this.element = element;
    this.keepPlace = keepPlace;
    this.text = "";
    this.rendered = null; // the text on screen
    this.shown = []; // [{html, nodes}] per top-level block on screen
    this.plain = null; // the text node when shown as plain text
    this.timer = null;
    this.nextAt = 0;
    this.frozen = { text: "", blocks: 0, env: {} }; // the finished blocks' source, their count, their references
  }

  show(text) {
    this.text = text;
    if (this.timer !== null) return;
    this.timer = setTimeout(() => this.flush(), Math.max(0, this.nextAt - performance.now()));
  }

  flush() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.text === this.rendered) return;
    this.rendered = this.text;
    const started = performance.now();
    // Line ends as markdown-it reads them, so that its line numbers index this text.
    const shown = this.text.replace(/\r\n?/g, "\n").replace(MARKS_RUN, "$1");
    if (!shown.startsWith(this.frozen.text)) this.frozen = { text: "", blocks: 0, env: {} }; // not the same answer grown
    // Plain once stays plain while the answer grows: what made it so (a block too large, too
    // many blocks, too deep) does not go away, and trying again would parse all of it again.
    const stays = this.plain !== null && shown.startsWith(this.plain.data);
    const rendered = stays || shown.length > MAX_ANSWER_CHARS ? false : this.render(shown);
    if (rendered === false) this.showPlain(shown);
    void this.element.offsetHeight; // lay out now, so that its cost counts in the spacing
    const took = performance.now() - started;
    this.nextAt = performance.now() + Math.max(MIN_RENDER_GAP_MS, RENDER_SPACING * took);
    if (rendered === "more") {
      // The next part in a task of its own, so that the page stays responsive between; none
      // once the answer has left the page (another chat was opened).
      this.rendered = null;
      this.element.dataset.rendering = "parts";
      this.timer = setTimeout(() => { if (this.element.isConnected) this.keepPlace(() => this.flush()); }, 0);
    } else {
      delete this.element.dataset.rendering;
    }
  }

  /** Renders `shown` from the frozen blocks on: true when all of it is rendered, "more"
   * when a part of a long tail was (the rest is rendered as if it had streamed), false when
   * it must be plain text. */
  render(shown) {
    const tail = shown.slice(this.frozen.text.length);
    let end = tail.length;
    if (end > PART_CHARS) {
      // A part ends at a blank line: the last within PART_CHARS, or else the first after.
      const before = tail.lastIndexOf("\n\n", PART_CHARS);
      const cut = before >= 0 ? before : tail.indexOf("\n\n", PART_CHARS);
      if (cut >= 0 && cut + 2 < tail.length) end = cut + 2;
    }
    let ends = false; // the part is known to end where a block begins: its last block is finished too
    for (;;) {
      if (end > MAX_RENDERED_CHARS) return false; // one block larger than a parse may take
      let whole = end === tail.length;
      let env = { ...this.frozen.env, references: { ...this.frozen.env.references } };
      let blocks = renderBlocks(tail.slice(0, end), env);
      if (blocks === null || this.frozen.blocks + blocks.length > MAX_BLOCKS) return false;
      if (!whole && !ends && blocks.length < 2) {
        // The part is one unfinished block (a blank line inside a code block or a list, or
        // one longer than a part): it ends where the next block of the text begins, as far
        // as a parse may take; with none there, the text is one block, and this parse of
        // it is the render (a growing code block is parsed twice a render, not three times).
        const probeEnv = { ...env, references: { ...env.references } };
        const probe = renderBlocks(tail.slice(0, MAX_RENDERED_CHARS), probeEnv);
        if (probe === null) return false;
        if (probe.length > 1) {
          const cutLine = tail.slice(0, end).split("\n").length - 1;
          const next = probe.slice(1).find((block) => block.line >= cutLine) ?? probe[probe.length - 1];
          [end, ends] = [lineStart(tail, next.line), true];
          continue;
        }
        if (tail.length > MAX_RENDERED_CHARS) return false;
        [blocks, env, end, whole] = [probe, probeEnv, tail.length, true];
      }
      this.showBlocks(blocks.map((block) => block.html));
      const finished = ends ? blocks.length : blocks.length - 1; // all but the last, which may grow
      if (finished > 0) {
        const at = ends ? end : lineStart(tail, blocks[blocks.length - 1].line);
        this.frozen = { text: this.frozen.text + tail.slice(0, at), blocks: this.frozen.blocks + finished, env };
      }
      return whole ? true : "more";
    }
  }

  showPlain(text) {
    if (!this.plain) {
      this.plain = document.createTextNode("");
      this.element.replaceChildren(this.plain);
      this.element.classList.add("plain");
      this.shown = [];
      this.frozen = { text: "", blocks: 0, env: {} };
    }
    this.plain.data = text; // text, never HTML
  }

  showBlocks(blocks) {
    if (this.plain) {
      this.element.replaceChildren();
      this.element.classList.remove("plain");
      this.plain = null;
    }
    // `blocks` follow the frozen ones, which stay as they are.
    const frozen = this.frozen.blocks;
    let same = 0;
    while (same < blocks.length && frozen + same < this.shown.length && this.shown[frozen + same].html === blocks[same]) same++;
    for (const old of this.shown.splice(frozen + same)) for (const node of old.nodes) node.remove();
    const template = document.createElement("template");
    for (const html of blocks.slice(same)) {
      template.innerHTML = html; // markdown-it's output: escaped text and our own tags only
      const nodes = [...template.content.childNodes];
      this.element.append(template.content);
      this.shown.push({ html, nodes });
    }
  }
}
