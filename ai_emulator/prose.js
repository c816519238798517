// The words of generated replies: the test vocabulary (AI_STYLE "words"), the markdown
// documents of AI_STYLE "prose", their thoughts, and the quote of a tool's result.

import { contentText } from "./common.js";
import { pieces, seededRandom } from "./random.js";

// AI_STYLE "words": words chosen so replies contain multi-byte UTF-8 (2, 3 and 4 bytes)
// that network chunking will split, plus punctuation and newlines that re-framing must keep
// intact.
export const VOCABULARY = [
  " the", " stream", " token", " worker", " model", " answer", " quickly", " arrives",
  " café", " naïve", " Größe", " déjà", " vu", " 東京", " 日本語", " 🚀", " 🙂", " —",
  ",", ".", "\n", " \"quoted\"", " back\\slash", " tab\there", " data:", " [DONE]", " <b>",
];

// Thinking words: reasoning deltas come from their own vocabulary, so a test can tell
// reasoning counted as answer text.
export const THOUGHTS = [" hmm", " let", " me", " think", " first", " consider", " maybe", " so", " ok", " 考虑", " 🤔"];

// AI_STYLE "prose": a newcomer at the chat page reads a plausible markdown answer, not word
// salad. Each reply is one document (an opening that quotes the question, a heading, a
// list, a fenced code block, a table, a closing line and a note saying where it came from)
// assembled from small phrase banks by the conversation's seed. It keeps some multi-byte
// UTF-8 (é, ï, 東京, 🚀, —, “”), so chunk boundaries still fall inside characters, and
// never a "<": the question's own are replaced, so no reply carries HTML.
const PROSE = {
  openings: [
    (question) => `You asked “${question}”. Here is a short answer, with an example and a quick reference.`,
    (question) => `“${question}” is a good question; let me walk through it step by step.`,
    (question) => `About “${question}”: the short version first, then the details.`,
    (question) => `Thanks for asking “${question}”. Below is an overview — a list, some code and a table.`,
    (question) => `Let's look at “${question}” together, starting with the main ideas.`,
  ],
  headings: ["## The short answer", "## How it works", "### Step by step", "## The main ideas", "### What to keep in mind"],
  listIntros: ["The essentials:", "In practice:", "A few things matter most:", "Here is the plan:"],
  items: [
    "Start with the smallest version that works, then grow it.",
    "Stream the answer: show the first words as soon as they arrive.",
    "Treat text as Unicode — café, naïve and Tokyo (東京) must survive any chunk boundary.",
    "Measure before optimising; the slow part is rarely where you expect.",
    "Handle errors explicitly, and keep the partial result when a stream fails.",
    "Write a test for each behaviour you rely on.",
    "Keep secrets out of logs: log ids and counts, never content.",
  ],
  codeIntros: [(language) => `A small example in ${language}:`, () => "Here is a sketch to start from:", () => "For instance:"],
  code: [
    ["Python", "python", [
      "import httpx",
      "",
      "with httpx.stream(\"POST\", \"http://localhost:8787/api/chat\", json={\"messages\": messages}) as response:",
      "    for line in response.iter_lines():",
      "        print(line)",
    ]],
    ["Python", "python", [
      "def pieces(text: str, size: int = 4):",
      "    \"\"\"Cut text the way a stream might: café → ca, fé.\"\"\"",
      "    for start in range(0, len(text), size):",
      "        yield text[start:start + size]",
    ]],
    ["JavaScript", "js", [
      "const response = await fetch(\"/api/chat\", { method: \"POST\", body: JSON.stringify({ messages }) });",
      "const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();",
      "for (let part = await reader.read(); !part.done; part = await reader.read()) {",
      "  console.log(part.value);",
      "}",
    ]],
    ["JavaScript", "js", [
      "const words = [\"café\", \"naïve\", \"東京\", \"🚀\"];",
      "for (const word of words) {",
      "  console.log(word, new TextEncoder().encode(word).length, \"bytes\");",
      "}",
    ]],
  ],
  tableIntros: ["At a glance:", "A quick reference:", "For comparison:", "In a table:"],
  tables: [
    [["Character", "Example", "UTF-8 bytes"],
      [["ASCII letter", "a", "1"], ["Accented letter", "é", "2"], ["Kanji", "東", "3"], ["Emoji", "🚀", "4"]]],
    [["Step", "Where", "Typical time"],
      [["Request", "browser → Worker", "a few ms"], ["First token", "the model", "under a second"],
        ["Each next token", "model → page", "20–50 ms"], ["Last event", "Worker → browser", "at once"]]],
    [["Approach", "Good for", "Trade-off"],
      [["Streaming", "long answers", "more events"], ["Whole answer", "short replies", "a longer wait"],
        ["Cache", "repeated questions", "stale results"], ["Retry", "flaky networks", "duplicate work"]]],
  ],
  closings: [
    "That is the gist — ask a follow-up if anything is unclear 🙂",
    "Hope this helps; happy building 🚀",
    "In short: start small, measure, then improve. Bonne chance!",
    "If you share more details, I can make the example more specific.",
    "Voilà — that should be enough to get started.",
  ],
  note: "_This answer comes from the local Workers AI emulator, not from a model._",
  // Past the document (AI_REPLY_TOKENS longer than it): more sections of the same kinds.
  sections: ["More detail", "A closer look", "Edge cases", "Going further", "Common pitfalls"],
  sentences: [
    "The same idea applies at every scale.",
    "Small, well-named steps are easier to review — and to undo.",
    "Each part can be tested on its own before they are put together.",
    "A déjà-vu moment is a hint that a helper function is missing.",
    "Most surprises come from the boundaries: empty input, huge input, odd characters like 東京.",
    "When in doubt, write down what you expect before you run it.",
  ],
  // Reasoning deltas, for thinking models: short thoughts in the same voice.
  thoughts: [
    "Let me think about what is being asked.",
    "The question seems to want a practical answer.",
    "A short list, an example and a table should cover it.",
    "I should keep it concise — and check the details.",
    "Maybe start with an overview, then the code.",
    "Okay, that looks like a plan.",
  ],
};

const QUOTED_WORDS = 8;
const QUOTED_LENGTH = 80; // code points: a question of one long word stays a short quote

// The last user question's first words, as inline text: no "<" or ">" (no HTML), no
// character that opens a markdown span (`, *, [, ], \), whitespace (newlines) as single spaces.
function questionQuote(messages) {
  const last = [...messages].reverse().find((message) => message?.role === "user");
  const words = contentText(last?.content).replace(/[<>`*[\]\\]/g, " ").split(/\s+/).filter(Boolean);
  let quote = Array.from(words.slice(0, QUOTED_WORDS).join(" "));
  const cut = words.length > QUOTED_WORDS || quote.length > QUOTED_LENGTH;
  quote = quote.slice(0, QUOTED_LENGTH).join("").trimEnd();
  return quote === "" ? "your question" : cut ? `${quote}…` : quote;
}

// Prose cut into tokens the size real ones have: a word with its leading space, a run of
// spaces or a newline; longer words in pieces of at most 6 code points. Joined, the
// tokens are the text.
export function textTokens(text) {
  const tokens = [];
  for (const [word] of text.matchAll(/\n| ?[^ \n]+| +/gu)) {
    const points = Array.from(word);
    for (let i = 0; i < points.length; i += 6) tokens.push(points.slice(i, i + 6).join(""));
  }
  return tokens;
}

const choose = (random, bank) => bank[Math.floor(random() * bank.length)];

// `count` distinct entries of `bank` in seeded order.
function chooseSome(random, bank, count) {
  const left = [...bank];
  return Array.from({ length: Math.min(count, left.length) }, () => left.splice(Math.floor(random() * left.length), 1)[0]);
}

function proseList(random) {
  const numbered = random() < 0.5;
  return chooseSome(random, PROSE.items, 3 + Math.floor(random() * 2))
    .map((item, i) => `${numbered ? `${i + 1}.` : "-"} ${item}`).join("\n");
}

function proseCode(random) {
  const [language, label, lines] = choose(random, PROSE.code);
  return `${choose(random, PROSE.codeIntros)(language)}\n\n\`\`\`${label}\n${lines.join("\n")}\n\`\`\``;
}

function proseTable(random) {
  const [header, rows] = choose(random, PROSE.tables);
  // Rows keep their order (the tables read top to bottom).
  const kept = chooseSome(random, rows.map((_, i) => i), 2 + Math.floor(random() * 3)).sort((a, b) => a - b);
  const line = (cells) => `| ${cells.join(" | ")} |`;
  const intro = choose(random, PROSE.tableIntros);
  return [`${intro}\n`, line(header), line(header.map(() => "---")), ...kept.map((i) => line(rows[i]))].join("\n");
}

function proseDocument(random, quote) {
  return [
    choose(random, PROSE.openings)(quote),
    choose(random, PROSE.headings),
    `${choose(random, PROSE.listIntros)}\n\n${proseList(random)}`,
    proseCode(random),
    proseTable(random),
    choose(random, PROSE.closings),
    PROSE.note,
  ].join("\n\n");
}

function proseSection(random, part) {
  const heading = `### ${choose(random, PROSE.sections)} (part ${part})`;
  const body = choose(random, [proseList, proseCode, proseTable])(random);
  return `\n\n${heading}\n\n${chooseSome(random, PROSE.sentences, 2).join(" ")}\n\n${body}`;
}

// The prose reply's tokens: the tool result's prefix, the document, then, for as long as
// AI_REPLY_TOKENS asks, one more section at a time, so a long reply is never held whole.
function* proseTokens(prefix, document, random) {
  yield* prefix;
  yield* document;
  for (let part = 2; ; part++) yield* textTokens(proseSection(random, part));
}

function* proseThoughts(random) {
  for (let first = true; ; first = false) yield* textTokens(`${first ? "" : " "}${choose(random, PROSE.thoughts)}`);
}

// The prose style of a reply: its document's length in tokens (the reply's own when
// AI_REPLY_TOKENS does not force one), its answer tokens and its thoughts. Answer and
// thoughts draw from generators of their own: a streamed reply thinks first and a collected
// one last, and both read the same.
export function proseReply(messages, seed, prefix) {
  const random = seededRandom(seed ^ 0x2545f491);
  const document = textTokens(`${prefix.length > 0 ? "\n\n" : ""}${proseDocument(random, questionQuote(messages))}`);
  const tokens = proseTokens(prefix, document, random);
  const thoughts = proseThoughts(seededRandom(seed ^ 0x68e31da4));
  return { length: document.length, nextToken: () => tokens.next().value, nextThought: () => thoughts.next().value };
}

// After a tool's result the reply starts by quoting it, so tests can see that it reached
// the model: "Tool result: " and the result's first 60 characters, in a few tokens.
export function toolResultTokens(messages, random) {
  const last = messages[messages.length - 1];
  if (last?.role !== "tool") return [];
  const excerpt = Array.from(contentText(last.content)).slice(0, 60).join("");
  return ["Tool result: ", ...pieces(excerpt, random, 16)];
}
