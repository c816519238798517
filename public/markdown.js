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
// Past this many characters an answer is shown as plain text: the re-render costs time in
// proportion to the text, and hostile input near this size costs up to ~0.3 s a render.
export const MAX_RENDERED_CHARS = 100_000;
// Past this many top-level blocks or parsed tokens too: each block is an element to lay out,
// and 30,000 one-line paragraphs took seconds in Chromium though under the character limit.
const MAX_BLOCKS = 5_000;
const MAX_TOKENS = 50_000;
// A run of combining marks costs the browser's layout time that grows with the square of its
// length (10,000 marks on one letter: a second); more than this many on one character are
// not shown (Copy still copies them).
const MARKS_RUN = /(\p{M}{16})\p{M}+/gu;
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

/** The HTML of each top-level block of `text`, or null when it must be shown as plain text. */
function renderBlocks(text) {
  if (text.length > MAX_RENDERED_CHARS) return null;
  const env = {};
  const tokens = md.parse(text, env);
  if (tokens.length > MAX_TOKENS) return null;
  const blocks = [];
  let start = 0;
  let depth = 0;
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i].level >= MAX_NESTING - 1) return null;
    depth += tokens[i].nesting;
    if (depth === 0) {
      blocks.push(md.renderer.render(tokens.slice(start, i + 1), md.options, env));
      if (blocks.length > MAX_BLOCKS) return null;
      start = i + 1;
    }
  }
  return blocks;
}

/**
 * The rendered view of one answer. `show(text)` is called with the whole text so far as it
 * grows; renders are spaced out while it streams, and only the blocks that changed are
 * replaced, so earlier blocks (and a selection or a copy button in them) stay as they are.
 * `flush()` renders now (the answer has settled).
 */
export class MarkdownView {
  constructor(element) {
    this.element = element;
    this.text = "";
    this.rendered = null; // the text on screen
    this.shown = []; // [{html, nodes}] per top-level block on screen
    this.plain = null; // the text node when shown as plain text
    this.timer = null;
    this.nextAt = 0;
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
    const shown = this.text.replace(MARKS_RUN, "$1");
    const blocks = renderBlocks(shown);
    if (blocks === null) this.showPlain(shown);
    else this.showBlocks(blocks);
    void this.element.offsetHeight; // lay out now, so that its cost counts in the spacing
    const took = performance.now() - started;
    this.nextAt = performance.now() + Math.max(MIN_RENDER_GAP_MS, RENDER_SPACING * took);
  }

  showPlain(text) {
    if (!this.plain) {
      this.plain = document.createTextNode("");
      this.element.replaceChildren(this.plain);
      this.element.classList.add("plain");
      this.shown = [];
    }
    this.plain.data = text; // text, never HTML
  }

  showBlocks(blocks) {
    if (this.plain) {
      this.element.replaceChildren();
      this.element.classList.remove("plain");
      this.plain = null;
    }
    let same = 0;
    while (same < blocks.length && same < this.shown.length && this.shown[same].html === blocks[same]) same++;
    for (const old of this.shown.splice(same)) for (const node of old.nodes) node.remove();
    const template = document.createElement("template");
    for (const html of blocks.slice(same)) {
      template.innerHTML = html; // markdown-it's output: escaped text and our own tags only
      const nodes = [...template.content.childNodes];
      this.element.append(template.content);
      this.shown.push({ html, nodes });
    }
  }
}
