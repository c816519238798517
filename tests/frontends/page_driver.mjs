// Drives the chat page in Debian's headless Chromium with playwright-core, for
// tests/frontends/test_page.py:
//
//   node tests/frontends/page_driver.mjs BASE_URL SCENARIO[,SCENARIO...] [SCREENSHOT_FILE]
//
// The scenarios run side by side, each in its own page of one browser. A scenario only
// acts and observes; the driver prints one JSON line, {"scenarios": {name: report}}, and
// the pytest side makes the assertions (together with the runtime's log lines). Exit
// status 0 when every scenario ran to its end, 1 when a step failed (its report then has
// `failed`). The process ends itself after WATCHDOG_MS, taking the browser with it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { randomBytes } from "node:crypto";
import { deflateSync } from "node:zlib";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];
const WATCHDOG_MS = 60_000;
const TOKEN = "page-s3cret"; // tests/frontends/upstreams.py's THINKING runtime requires it
const STEP_MS = 20_000;

// --- page helpers -----------------------------------------------------------------------

const lastAnswer = (page) => page.locator("li.message.assistant").last();
const messageBox = (page) => page.getByRole("textbox", { name: "Message" });

async function ask(page, text) {
  await messageBox(page).fill(text);
  await messageBox(page).press("Enter");
}

async function waitForFirstText(page) {
  await page.waitForFunction(() => {
    const answers = document.querySelectorAll("li.message.assistant .content");
    return answers.length > 0 && answers[answers.length - 1].textContent.length > 0;
  }, null, { timeout: STEP_MS, polling: 5 });
}

async function waitSettled(page) {
  await page.waitForFunction(() => {
    const answers = document.querySelectorAll("li.message.assistant");
    return answers.length > 0 && answers[answers.length - 1].dataset.state === "settled";
  }, null, { timeout: STEP_MS });
}

async function answerState(page) {
  const answer = lastAnswer(page);
  const notice = answer.locator(".notice-text");
  const retry = answer.getByRole("button", { name: /^Retry/ });
  return {
    outcome: await answer.getAttribute("data-outcome"),
    requestId: await answer.getAttribute("data-request-id"),
    text: await answer.locator(".content").textContent(),
    notice: (await notice.count()) ? await notice.textContent() : null,
    retry: (await retry.count()) ? { label: await retry.textContent(), disabled: await retry.isDisabled() } : null,
    sendDisabled: await page.getByRole("button", { name: "Send" }).isDisabled(),
    stopVisible: await page.getByRole("button", { name: "Stop" }).isVisible(),
  };
}

// How the last answer ended: answerState, with the notice's Continue, how many notices it
// has, its saved entry's `incomplete` and the status line (what a screen reader hears).
async function endingState(page) {
  const answer = lastAnswer(page);
  const proceed = answer.getByRole("button", { name: "Continue" });
  return {
    ...(await answerState(page)),
    continue: (await proceed.count()) ? { label: await proceed.textContent(), disabled: await proceed.isDisabled() } : null,
    notices: await answer.locator(".notice").count(),
    status: await page.locator("#status").textContent(),
    assistantMessages: await page.locator("li.message.assistant").count(),
    userMessages: await page.locator("li.message.user .content").allTextContents(),
  };
}

async function reload(page) {
  await page.reload({ waitUntil: "load" });
  await page.waitForFunction(() => document.activeElement?.id === "input");
}

// Clicks the last answer's Continue and waits until its text grows past what it was (the
// continuation has begun to arrive).
async function startContinuing(page) {
  const before = (await lastAnswer(page).locator(".content").textContent()).length;
  await lastAnswer(page).getByRole("button", { name: "Continue" }).click();
  await page.waitForFunction((length) => {
    const answers = document.querySelectorAll("li.message.assistant .content");
    return answers.length > 0 && answers[answers.length - 1].textContent.length > length;
  }, before, { timeout: STEP_MS, polling: 5 });
}

// Continues the last answer to its end; returns how it ended.
async function continueToEnd(page) {
  await startContinuing(page);
  await waitSettled(page);
  return endingState(page);
}

// Asks `question`, reports how the answer ended and what was saved, reloads, and reports
// the answer as the saved chat draws it.
async function endAndReload(page, report, question) {
  await ask(page, question);
  await waitSettled(page);
  report.answer = await endingState(page);
  report.saved = await savedChat(page);
  await reload(page);
  report.afterReload = await endingState(page);
}

// Records the length of the streaming answer's text on every change, with a timestamp,
// so the test can see that text grew in steps while the answer was still streaming.
async function recordGrowth(page) {
  await page.evaluate(() => {
    window.__growth = [];
    new MutationObserver(() => {
      const answers = document.querySelectorAll("li.message.assistant");
      const answer = answers[answers.length - 1];
      if (!answer) return;
      const length = answer.querySelector(".content").textContent.length;
      const samples = window.__growth;
      if (!samples.length || samples[samples.length - 1].length !== length || samples[samples.length - 1].state !== answer.dataset.state) {
        samples.push({ at: performance.now(), length, state: answer.dataset.state });
      }
    }).observe(document.getElementById("messages"), { subtree: true, childList: true, characterData: true, attributes: true });
  });
}

// Every assistant answer on the page with its tool-call sections, as the DOM has them.
async function assistantBubbles(page) {
  return page.evaluate(() => [...document.querySelectorAll("li.message.assistant")].map((item) => {
    const content = item.querySelector(".content");
    return {
      outcome: item.dataset.outcome ?? null,
      text: content.textContent,
      textShown: getComputedStyle(content).display !== "none",
      notice: item.querySelector(".notice-text")?.textContent ?? null,
      retry: item.querySelector("button.retry") !== null,
      calls: [...item.querySelectorAll("details.tool-call")].map((section) => {
        const result = section.querySelector(".tool-result");
        return {
          open: section.open,
          name: section.querySelector(".tool-name").textContent,
          status: section.querySelector(".tool-status").textContent,
          arguments: section.querySelector(".tool-arguments").textContent,
          inputError: section.querySelector(".tool-input-error")?.textContent ?? null,
          result: result?.textContent ?? null,
          resultIsError: result ? result.classList.contains("error") : null,
          elementsInText: section.querySelectorAll(".tool-name *, .tool-arguments *, .tool-input-error *, .tool-result *").length,
        };
      }),
    };
  }));
}

// The chat this tab has open, as the page keeps it (public/chats.js), and its pending answer.
async function savedChat(page) {
  return page.evaluate(() => {
    const tab = JSON.parse(sessionStorage.getItem("chat-page-v1") || "null");
    const chat = tab && JSON.parse(localStorage.getItem(`chat-page-chat-v1:${tab.chatId}`) || "null");
    return { entries: chat?.entries ?? null, pending: tab?.pending ?? null };
  });
}

// The main thread's responsiveness while `action` runs: the longest gap between ticks of a
// 10 ms timer (a frozen page shows as a long gap) and the long tasks Chromium reports.
async function watchMainThread(page, action) {
  await page.evaluate(() => {
    const watch = { maxGapMs: 0, longTasks: 0, longestTaskMs: 0, last: performance.now() };
    watch.timer = setInterval(() => {
      const now = performance.now();
      watch.maxGapMs = Math.max(watch.maxGapMs, now - watch.last);
      watch.last = now;
    }, 10);
    watch.observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        watch.longTasks += 1;
        watch.longestTaskMs = Math.max(watch.longestTaskMs, entry.duration);
      }
    });
    watch.observer.observe({ type: "longtask" });
    window.__watch = watch;
  });
  const started = Date.now();
  await action();
  const elapsedMs = Date.now() - started;
  return page.evaluate((elapsed) => {
    const { maxGapMs, longTasks, longestTaskMs, timer, observer } = window.__watch;
    clearInterval(timer);
    observer.disconnect();
    return { maxGapMs: Math.round(maxGapMs), longTasks, longestTaskMs: Math.round(longestTaskMs), elapsedMs: elapsed };
  }, elapsedMs);
}

// WCAG 2 contrast of every visible text and control on the page against the background
// it is drawn on (the first opaque background up its ancestors); disabled controls are
// exempt, as WCAG has them. Returns the pairs checked and those under AA (4.5:1, 3:1 for
// large text).
async function contrastAudit(page) {
  return page.evaluate(() => {
    const parse = (color) => {
      const parts = color.match(/[\d.]+/g).map(Number);
      return { rgb: parts.slice(0, 3), alpha: parts.length > 3 ? parts[3] : 1 };
    };
    const luminance = (rgb) => {
      const [r, g, b] = rgb.map((c) => { const v = c / 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const backgroundOf = (element) => {
      for (let node = element; node; node = node.parentElement) {
        const { rgb, alpha } = parse(getComputedStyle(node).backgroundColor);
        if (alpha > 0) return rgb;
      }
      return [255, 255, 255];
    };
    const checked = [];
    const failing = [];
    for (const element of document.querySelectorAll("body *")) {
      const hasText = [...element.childNodes].some((node) => node.nodeType === 3 && node.data.trim());
      const isControl = element.matches("button, summary, input, textarea, a");
      if (!(hasText || isControl) || element.closest(".visually-hidden, [hidden]") || element.matches(":disabled")) continue;
      const box = element.getBoundingClientRect();
      const style = getComputedStyle(element);
      if (box.width === 0 || box.height === 0 || style.visibility === "hidden" || element.checkVisibility?.() === false) continue;
      const foreground = parse(style.color);
      const background = backgroundOf(element);
      const blended = foreground.rgb.map((c, i) => c * foreground.alpha + background[i] * (1 - foreground.alpha));
      const [light, dark] = [luminance(blended), luminance(background)].sort((a, b) => b - a);
      const ratio = (light + 0.05) / (dark + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      const entry = { element: element.tagName.toLowerCase() + (element.className ? "." + String(element.className).split(" ").join(".") : ""), ratio: Math.round(ratio * 100) / 100 };
      checked.push(entry);
      if (ratio < (large ? 3 : 4.5)) failing.push(entry);
    }
    return { checked: checked.length, kinds: [...new Set(checked.map((entry) => entry.element))], failing };
  });
}

// What a rendered answer holds, element by element.
async function renderedAnswer(page) {
  return lastAnswer(page).evaluate((item) => {
    const content = item.querySelector(".content");
    const count = (selector) => content.querySelectorAll(selector).length;
    return {
      headings: [...content.querySelectorAll("h1, h2, h3")].map((h) => h.tagName + " " + h.textContent),
      strong: count("strong"), em: count("em"), inlineCode: count(":not(pre) > code"),
      bullets: [...content.querySelectorAll("ul > li")].map((li) => li.textContent),
      numbers: [...content.querySelectorAll("ol > li")].map((li) => li.textContent),
      code: [...content.querySelectorAll(".code-block")].map((block) => ({
        language: block.querySelector(".code-language").textContent,
        text: block.querySelector("code").textContent,
        font: getComputedStyle(block.querySelector("pre")).fontFamily,
        whiteSpace: getComputedStyle(block.querySelector("pre")).whiteSpace,
        scrolls: block.querySelector("pre").scrollWidth > block.querySelector("pre").clientWidth,
        copyButton: block.querySelector("button.copy-code")?.textContent ?? null,
      })),
      table: [...content.querySelectorAll("tr")].map((row) => [...row.children].map((cell) => cell.tagName + " " + cell.textContent)),
      links: [...content.querySelectorAll("a")].map((a) => ({ text: a.textContent, href: a.getAttribute("href"), target: a.target, rel: a.rel })),
      elements: [...new Set([...content.querySelectorAll("*")].map((e) => e.tagName.toLowerCase()))].sort(),
      plain: content.classList.contains("plain"),
      textLength: content.textContent.length,
      actions: [...item.querySelectorAll(".answer-actions button")].map((b) => b.textContent),
    };
  });
}

// Sources the page tried to load (an image, a frame) besides its own.
function foreignRequests(page, baseUrl) {
  const foreign = [];
  page.on("request", (request) => {
    if (!request.url().startsWith(baseUrl)) foreign.push(request.url());
  });
  return foreign;
}

function chatBodies(page) {
  const bodies = [];
  page.on("request", (request) => {
    if (request.method() === "POST" && new URL(request.url()).pathname === "/api/chat") bodies.push(request.postDataJSON());
  });
  return bodies;
}

// Lets a held step of the emulator's script go on (tests/harness/scenarios.py, held).
async function release(name) {
  if (!process.env.SCRIPT_URL) throw new Error("SCRIPT_URL is not set: a held answer cannot be released");
  const response = await fetch(`${process.env.SCRIPT_URL}/released/${name}`, { method: "POST" });
  if (!response.ok) throw new Error(`releasing ${name}: ${response.status}`);
}

// --- images (issue 30): files built here, byte by byte -----------------------------------

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes) {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** A truecolour PNG of `width`×`height` pixels, `rgb` (3 bytes a pixel, row by row). */
function png(width, height, rgb) {
  const chunk = (type, data) => {
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const framed = Buffer.alloc(body.length + 8);
    framed.writeUInt32BE(data.length, 0);
    body.copy(framed, 4);
    framed.writeUInt32BE(crc32(body), body.length + 4);
    return framed;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bits per channel
  header[9] = 2; // truecolour
  const rows = Buffer.alloc((width * 3 + 1) * height); // each row: filter 0, then its pixels
  for (let y = 0; y < height; y++) rgb.copy(rows, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows, { level: 1 })), chunk("IEND", Buffer.alloc(0))]);
}

// The emulator's vision models name what they got: "I see a 3×2 PNG." (ai_emulator/images.js).
const PIXELS_PNG = png(3, 2, Buffer.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 0, 0, 255, 255, 255, 0, 255]));
const DOT_GIF = Buffer.from("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==", "base64"); // 1×1
// Noise does not compress: 1000×1000 pixels make a PNG of about 3 MB, so two fit the
// Worker's 6 MiB a request and a third does not; and its thumbnail is the costliest to keep.
const noisePng = () => png(1000, 1000, randomBytes(1000 * 1000 * 3));
const file = (name, mimeType, buffer) => ({ name, mimeType, buffer });

/** Chooses `files` in the file chooser that the "Attach images" button opens. */
async function chooseFiles(page, files) {
  const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.getByRole("button", { name: "Attach images" }).click()]);
  await chooser.setFiles(files);
  return chooser;
}

const attached = (page) => page.locator("#attachments li");

/** Waits until the composer holds `count` images. */
async function waitAttached(page, count) {
  await page.waitForFunction((n) => document.querySelectorAll("#attachments li").length === n, count, { timeout: STEP_MS });
}

/** Waits for the composer's notice to name `name`, and returns it with what else it says. */
async function refusal(page, name) {
  const notice = page.locator("#attach-notice");
  await notice.filter({ hasText: name }).waitFor();
  return {
    lines: await notice.locator("span").allTextContents(),
    role: await notice.getAttribute("role"),
    visible: await notice.isVisible(),
    attached: await attached(page).count(),
  };
}

/** The images waiting in the composer, as shown. */
async function previews(page) {
  return attached(page).evaluateAll((items) => items.map((item) => {
    const img = item.querySelector("img");
    return { src: img.getAttribute("src").slice(0, 30), alt: img.alt, remove: item.querySelector("button").getAttribute("aria-label"),
      width: img.naturalWidth, height: img.naturalHeight };
  }));
}

/** The images of each user message, as shown: the start of each <img>'s URL, its alt and
 * its size once loaded; or the description shown instead. */
async function userImages(page) {
  return page.locator("li.message.user").evaluateAll(async (items) => Promise.all(items.map(async (item) => ({
    text: item.querySelector(".content").textContent,
    images: await Promise.all([...item.querySelectorAll(".message-images img")].map(async (img) => {
      await img.decode();
      return { src: img.getAttribute("src").slice(0, 23), alt: img.alt, width: img.naturalWidth, height: img.naturalHeight };
    })),
    described: [...item.querySelectorAll(".message-images .image-gone")].map((gone) => gone.textContent),
  }))));
}

/** What the chat this tab has open costs in localStorage: its JSON's characters, and each
 * kept thumbnail's. */
async function keptFigures(page) {
  return page.evaluate(() => {
    const tab = JSON.parse(sessionStorage.getItem("chat-page-v1"));
    const kept = localStorage.getItem(`chat-page-chat-v1:${tab.chatId}`) ?? "";
    const images = (JSON.parse(kept || "null")?.entries ?? []).flatMap((entry) => entry.images ?? []);
    return { chatChars: kept.length, thumbChars: images.map((image) => image.thumb?.length ?? null),
      thumbTypes: images.map((image) => image.thumb?.slice(0, 15) ?? null) };
  });
}

// --- scenarios ----------------------------------------------------------------------------

const scenarios = {
  /** Two turns typed with the keyboard; how the first answer grew; a screenshot. */
  async answer(page, report, screenshot) {
    const bodies = chatBodies(page);
    report.labels = {
      message: await messageBox(page).count(),
      send: await page.getByRole("button", { name: "Send" }).count(),
      log: await page.getByRole("log").count(),
      logLive: await page.getByRole("log").getAttribute("aria-live"),
    };
    await recordGrowth(page);
    await messageBox(page).fill("How does the answer reach this page?");
    await messageBox(page).press("Shift+Enter");
    await messageBox(page).pressSequentially("Briefly, please.");
    report.inputBeforeSend = await messageBox(page).inputValue();
    await messageBox(page).press("Enter");
    await waitForFirstText(page);
    report.atFirstText = await answerState(page);
    // Enter while an answer streams must not send a second turn.
    await messageBox(page).fill("too early");
    await messageBox(page).press("Enter");
    report.userMessagesWhileStreaming = await page.locator("li.message.user").count();
    await messageBox(page).fill("");
    await release("first-answer-typed-ahead"); // the answer waited for this (upstreams.py FIRST_HELD)
    await waitSettled(page);
    report.first = await answerState(page);
    report.growth = await page.evaluate(() => window.__growth);
    report.firstUserText = await page.locator("li.message.user .content").first().textContent();

    await ask(page, "And if I press Stop?");
    await waitSettled(page);
    report.second = await answerState(page);
    report.bodies = bodies;
    report.model = await page.locator("#model").textContent();
  },

  /** A markdown answer as it streams and once settled; a screenshot; both colour schemes'
   * contrast; copy, regenerate, a new chat and reopening the first. */
  async markdown(page, report, screenshot) {
    const bodies = chatBodies(page);
    await page.evaluate(() => {
      // Which elements were on screen while the answer still streamed.
      window.__whileStreaming = new Set();
      new MutationObserver(() => {
        const item = [...document.querySelectorAll("li.message.assistant")].at(-1);
        if (item?.dataset.state !== "streaming") return;
        for (const element of item.querySelectorAll(".content *")) window.__whileStreaming.add(element.tagName.toLowerCase());
      }).observe(document.getElementById("messages"), { subtree: true, childList: true, attributes: true });
    });
    await ask(page, "Show me markdown.");
    await waitSettled(page);
    report.whileStreaming = await page.evaluate(() => [...window.__whileStreaming].sort());
    report.answer = await answerState(page);
    report.rendered = await renderedAnswer(page);
    if (screenshot) {
      await page.locator("#input").blur();
      await page.screenshot({ path: screenshot, animations: "disabled" });
      report.screenshot = screenshot;
    }
    report.contrastLight = await contrastAudit(page);
    await page.locator("#chats summary").click();
    report.contrastMenu = await contrastAudit(page);
    await page.keyboard.press("Escape");
    await page.emulateMedia({ colorScheme: "dark" });
    report.contrastDark = await contrastAudit(page);
    await page.emulateMedia({ colorScheme: "light" });

    const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
    await lastAnswer(page).locator("button.copy-code").click();
    report.copiedCode = await clipboard();
    report.copyLabel = await lastAnswer(page).locator("button.copy-code").textContent();
    await lastAnswer(page).locator("button.copy-answer").click();
    report.copiedAnswer = await clipboard();

    await lastAnswer(page).getByRole("button", { name: "Regenerate" }).click();
    await waitSettled(page);
    report.regenerated = await answerState(page);
    report.assistantAfterRegenerate = await page.locator("li.message.assistant").count();

    await page.getByRole("button", { name: "New chat" }).click();
    report.messagesInNewChat = await page.locator("li.message").count();
    await ask(page, "Hello?");
    await waitSettled(page);
    await page.locator("#chats summary").click();
    report.chatList = await page.locator("#chat-list button").evaluateAll((buttons) => buttons.map((b) => ({
      title: b.querySelector(".chat-title").textContent, current: b.getAttribute("aria-current") === "true" })));
    await page.locator("#chat-list button", { hasText: "Show me markdown." }).click();
    report.reopened = {
      menuOpen: await page.locator("#chats").evaluate((menu) => menu.open),
      users: await page.locator("li.message.user .content").allTextContents(),
      answer: await answerState(page),
    };
    await page.reload({ waitUntil: "load" });
    await page.waitForFunction(() => document.activeElement?.id === "input");
    report.afterReload = { users: await page.locator("li.message.user .content").allTextContents(), rendered: await renderedAnswer(page) };
    report.bodies = bodies;
  },

  /** Markdown that tries to run script or load a resource. */
  async hostile(page, report, _screenshot, baseUrl) {
    const foreign = foreignRequests(page, baseUrl);
    await page.evaluate(() => { window.__pwned = 0; });
    report.watch = await watchMainThread(page, async () => {
      await ask(page, "Show me hostile markdown.");
      await waitSettled(page);
    });
    report.answer = await answerState(page);
    report.rendered = await renderedAnswer(page);
    await page.waitForTimeout(300); // a load or a handler would have run by now
    report.pwned = await page.evaluate(() => window.__pwned);
    report.foreign = [...foreign]; // what the rendered markdown asked for
    const failed = [];
    page.on("requestfailed", (request) => failed.push([request.url(), request.failure()?.errorText ?? ""]));
    const answered = [];
    page.on("response", (response) => { if (!response.url().startsWith(baseUrl)) answered.push(response.url()); });
    report.counts = await page.evaluate(() => Object.fromEntries(["script", "img", "iframe", "style", "object", "embed"].map(
      (tag) => [tag, document.querySelectorAll(`#messages ${tag}`).length])));
    // The renderer's safety switched off: markup put into the answer as raw HTML. The page's
    // Content-Security-Policy (public/_headers) must still stop every load and every script.
    report.unsafe = await page.evaluate(async () => {
      const violations = [];
      document.addEventListener("securitypolicyviolation", (event) => violations.push(event.effectiveDirective));
      const content = document.querySelector("li.message.assistant:last-child .content");
      content.innerHTML = '<img src="https://images.example/leak.png"><img src="/missing.png" onerror="window.__pwned = 9">'
        + '<iframe src="https://frames.example/"></iframe><link rel="stylesheet" href="https://styles.example/x.css">'
        + '<object data="https://objects.example/x"></object>';
      for (const source of ["https://scripts.example/x.js", null]) {
        const script = document.createElement("script");
        if (source) script.src = source;
        else script.textContent = "window.__pwned = 10";
        content.append(script);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      return { violations: [...new Set(violations)].sort(), pwned: window.__pwned };
    });
    // Chromium reports a load the policy stopped as a failed request (errorText "csp"),
    // never sent (a host that does not resolve would fail otherwise).
    report.unsafe.requested = foreign.slice(report.foreign.length);
    report.unsafe.failed = failed;
    report.unsafe.answered = answered;
  },

  /** Pathological markdown and a long answer: the page stays responsive. */
  async heavy(page, report) {
    for (const [name, question] of [["deep", "Nest deeply."], ["table", "A huge table."], ["long", "A long answer, please."],
      ["document", "A long document, please."]]) {
      report[name] = await watchMainThread(page, async () => {
        await ask(page, question);
        await waitSettled(page);
      });
      report[name].answer = await answerState(page);
      const { plain, elements, textLength, table, bullets, headings, code } = await renderedAnswer(page);
      report[name].rendered = { plain, elements, textLength, rows: table.length, bullets: bullets.length, headings: headings.length,
                                codeBlocks: code.length };
      report[name].text = await lastAnswer(page).locator(".content").evaluate((content) => content.textContent.slice(-200));
      delete report[name].answer.text;
      if (name === "document") {
        // Rendered block by block while it streamed, and whole at once after a reload: the same.
        const html = () => lastAnswer(page).locator(".content").evaluate((content) => content.innerHTML);
        const streamed = await html();
        await page.reload({ waitUntil: "load" });
        await page.waitForFunction(() => document.activeElement?.id === "input");
        await page.waitForFunction(() => !document.querySelector("[data-rendering]")); // its later parts
        report[name].sameAsWhole = streamed === await html();
      }
      await page.getByRole("button", { name: "New chat" }).click();
    }
    // Reopening a chat that holds all four: their saved turns merged into this chat, then a
    // reload. How long until every answer is on the page, its text no longer growing (long
    // ones are rendered a part at a time), and the long tasks on the way (buffered: the
    // observer starts after the load).
    report.reopened = await page.evaluate(() => {
      const prefix = "chat-page-chat-v1:";
      const tab = JSON.parse(sessionStorage.getItem("chat-page-v1"));
      const saved = Object.keys(localStorage).filter((key) => key.startsWith(prefix) && key !== prefix + tab.chatId)
        .map((key) => JSON.parse(localStorage.getItem(key))).sort((a, b) => a.entries.length - b.entries.length);
      // And one more answer: a 20 KB table, one block longer than a part, then 115 KB of
      // paragraphs (a part that is one block ends where the next block begins: it was
      // shown whole as plain text).
      const table = "| n | name |\n|---|---|\n" + Array.from({ length: 1000 }, (_, n) => `| ${n} | row ${n} |\n`).join("");
      const paragraphs = Array.from({ length: 2400 }, (_, n) => `Paragraph ${n} of the tail, with **bold** words.`).join("\n\n");
      const extra = [{ role: "user", content: "A table, then a long tail." }, { role: "assistant", content: `Intro\n\n${table}\n${paragraphs}\n` }];
      const merged = { ...saved[0], entries: [...saved.flatMap((chat) => chat.entries), ...extra] };
      localStorage.setItem(prefix + tab.chatId, JSON.stringify(merged));
      return { chats: saved.length, chars: JSON.stringify(merged).length };
    });
    await page.reload({ waitUntil: "load" });
    Object.assign(report.reopened, await page.evaluate(() => new Promise((resolve) => {
      const tasks = [];
      new PerformanceObserver((list) => tasks.push(...list.getEntries().map((entry) => entry.duration)))
        .observe({ type: "longtask", buffered: true });
      let length = -1;
      let stableSince = performance.now();
      const poll = setInterval(() => {
        const answers = [...document.querySelectorAll("li.message.assistant .content")];
        const now = performance.now();
        const total = answers.reduce((sum, content) => sum + content.textContent.length, 0);
        if (total !== length) [length, stableSince] = [total, now];
        if (answers.length && !document.querySelector("[data-rendering]") && now - stableSince >= 300) {
          clearInterval(poll);
          resolve({ answers: answers.length, textLength: total, settledMs: Math.round(stableSince), longTasks: tasks.length,
                    plain: answers.map((content) => content.classList.contains("plain")), tables: document.querySelectorAll("li.message.assistant table").length,
                    longestTaskMs: Math.round(Math.max(0, ...tasks)) });
        }
      }, 20);
    })));
  },

  /** Stop while the answer streams, then Retry the same turn. */
  async stop(page, report) {
    const bodies = chatBodies(page);
    await ask(page, "Tell me a long story.");
    await waitForFirstText(page);
    // force: skip the wait for a stable layout, which on a loaded machine can outlast the
    // answer; a click that came too late shows up as a "complete" outcome, not a timeout.
    await page.getByRole("button", { name: "Stop" }).click({ force: true });
    await waitSettled(page);
    report.stopped = await answerState(page);
    await page.waitForTimeout(500); // text arriving after Stop would show up by now
    report.textHalfASecondLater = await lastAnswer(page).locator(".content").textContent();
    await lastAnswer(page).getByRole("button", { name: "Retry" }).click();
    await waitSettled(page);
    report.retried = await answerState(page);
    report.bodies = bodies.slice();
    report.assistantMessages = await page.locator("li.message.assistant").count();

    // In a new chat: a stopped answer survives a reload, with its notice and Retry, and the
    // next turn sends it back as the text that was shown.
    await page.getByRole("button", { name: "New chat" }).click();
    report.afterNewChat = { messages: await page.locator("li.message").count(), focus: await page.evaluate(() => document.activeElement?.id) };
    await ask(page, "Tell me a long story.");
    await waitForFirstText(page);
    await page.getByRole("button", { name: "Stop" }).click({ force: true });
    await waitSettled(page);
    report.stoppedAgain = await answerState(page);
    report.savedStopped = await savedChat(page);
    await page.reload({ waitUntil: "load" });
    await page.waitForFunction(() => document.activeElement?.id === "input");
    report.afterReload = await answerState(page);
    report.userMessagesAfterReload = await page.locator("li.message.user .content").allTextContents();
    const before = bodies.length;
    await ask(page, "And now?");
    await waitSettled(page);
    report.afterStopBody = bodies[before];
    report.chats = await page.evaluate(() => JSON.parse(localStorage.getItem("chat-page-chats-v1")).map((chat) => chat.title));
  },

  /** Markup in model output (the emulator echoes the question) stays text. */
  async markup(page, report) {
    await page.evaluate(() => { window.__pwned = 0; });
    await ask(page, '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b>');
    await waitSettled(page);
    report.answer = await answerState(page);
    report.userText = await page.locator("li.message.user .content").last().textContent();
    report.images = await page.locator("img").count();
    report.scripts = await page.locator("#messages script").count();
    report.bold = await page.locator("#messages b").count();
    report.pwned = await page.evaluate(() => window.__pwned);
  },

  /** The first answer loses its terminal event on the way and cannot be resumed (the
   * stream route is unreachable); Retry gets the whole one. */
  async cut_off(page, report) {
    const bodies = chatBodies(page);
    report.intercepted = [];
    report.resumeAttempts = 0;
    await page.route("**/api/chat/streams/**", (route) => {
      report.resumeAttempts += 1;
      return route.abort("connectionfailed");
    });
    await page.route("**/api/chat", async (route) => {
      if (report.intercepted.length) return route.continue();
      // The Worker always ends with a terminal event; a dropped connection is simulated by
      // replaying its real answer without that last event.
      const response = await route.fetch();
      const body = await response.text();
      const cut = body.lastIndexOf("event: done\n");
      report.intercepted.push({ status: response.status(), hadDone: cut >= 0 });
      await route.fulfill({ response, body: cut >= 0 ? body.slice(0, cut) : body });
    });
    await ask(page, "Will this arrive whole?");
    await waitSettled(page);
    report.cut = await answerState(page);
    await lastAnswer(page).getByRole("button", { name: "Retry" }).click();
    await waitSettled(page);
    report.retried = await answerState(page);
    report.bodies = bodies;
  },

  /** The connection drops mid-answer (the first response ends after half its deltas, with
   * no terminal event): the page shows it is reconnecting and resumes where it left off. */
  async resume_drop(page, report) {
    const bodies = chatBodies(page);
    report.resumes = [];
    page.on("request", (request) => {
      if (request.url().includes("/api/chat/streams/")) report.resumes.push({ method: request.method(), lastEventId: request.headers()["last-event-id"] ?? null });
    });
    await page.route("**/api/chat", async (route) => {
      const response = await route.fetch();
      const body = await response.text();
      const frames = body.split("\n\n");
      const kept = frames.slice(0, Math.floor(frames.length / 2)).join("\n\n") + "\n\n";
      report.cutAfterId = kept.match(/^id: (\d+)$/gm).at(-1).slice(4);
      await route.fulfill({ response, body: kept });
    });
    await recordGrowth(page);
    await ask(page, "Will this survive a drop?");
    await waitSettled(page);
    report.answer = await answerState(page);
    report.resumed = await lastAnswer(page).getAttribute("data-resumed");
    report.states = [...new Set((await page.evaluate(() => window.__growth)).map((sample) => sample.state))];
    report.bodies = bodies;
  },

  /** A reload while the answer is being written: the page picks it up and finishes it. */
  async reload(page, report) {
    await ask(page, "Tell me a long story.");
    await waitForFirstText(page);
    report.before = await answerState(page);
    await page.reload({ waitUntil: "load" });
    await page.waitForFunction(() => document.activeElement?.id === "input");
    report.afterReloadUserMessages = await page.locator("li.message.user .content").allTextContents();
    await waitSettled(page);
    report.after = await answerState(page);
    report.assistantMessages = await page.locator("li.message.assistant").count();
  },

  /** A turn over the Worker's body limit: the 413 is explained and the text comes back. */
  async too_long(page, report) {
    const text = "word ".repeat(14_000);
    await messageBox(page).fill(text);
    await messageBox(page).press("Enter");
    await waitSettled(page);
    report.answer = await answerState(page);
    report.inputLength = (await messageBox(page).inputValue()).length;
    report.sentLength = text.length;
  },

  /** Whatever the Worker streams; reports how the answer ended. */
  async ask_once(page, report) {
    await ask(page, "Hello?");
    await waitSettled(page);
    report.answer = await answerState(page);
    report.noticeInView = await lastAnswer(page).locator(".notice").evaluate((notice) => {
      const box = notice.getBoundingClientRect();
      return box.top >= 0 && box.bottom <= window.innerHeight;
    });
    report.contrast = await contrastAudit(page);
    await page.reload({ waitUntil: "load" });
    await page.waitForFunction(() => document.activeElement?.id === "input");
    report.afterReload = await answerState(page);
  },

  /** A Worker that needs a token: refused without one, answered once it is entered under
   * Settings; where the token is kept and how it is sent. */
  async token(page, report) {
    const sent = [];
    page.on("request", (request) => {
      if (request.method() === "POST") sent.push({ url: request.url(), authorization: request.headers().authorization ?? null });
    });
    report.settingsOpenAtStart = await page.locator("#settings").evaluate((details) => details.open);
    await ask(page, "Hello?");
    await waitSettled(page);
    report.refused = await answerState(page);
    report.settingsOpenAfter401 = await page.locator("#settings").evaluate((details) => details.open);
    report.focusAfter401 = await page.evaluate(() => document.activeElement?.id);
    await page.getByLabel("Access token").fill(TOKEN);
    await lastAnswer(page).getByRole("button", { name: "Retry" }).click();
    await waitSettled(page);
    report.answered = await answerState(page);
    report.sent = sent;
    report.pageUrl = page.url();
    report.storage = await page.evaluate(() => ({ session: { ...sessionStorage }, local: { ...localStorage } }));
    await page.reload({ waitUntil: "load" });
    await page.waitForFunction(() => document.activeElement?.id === "input");
    report.tokenAfterReload = await page.getByLabel("Access token").inputValue();
  },

  /** Reasoning streamed before the answer: a collapsed "Thinking" section, as text. */
  async thinking(page, report) {
    await page.evaluate(() => { window.__pwned = 0; });
    await page.getByText("Settings").click();
    await page.getByLabel("Access token").fill(TOKEN);
    await page.getByText("Settings").click();
    await ask(page, "Think first.");
    await page.locator("li.message.assistant .thinking").waitFor();
    report.thinkingBeforeAnswer = await lastAnswer(page).locator(".content").textContent();
    await release("thought-before-answer"); // the answer waited for this (upstreams.py THOUGHT_HELD)
    await waitSettled(page);
    report.answer = await answerState(page);
    const section = lastAnswer(page).locator("details.thinking");
    report.sections = await section.count();
    report.openAtFirst = await section.evaluate((details) => details.open);
    report.summary = await section.locator("summary").textContent();
    report.thinkingVisibleCollapsed = await section.locator(".thinking-text").isVisible();
    await section.locator("summary").click();
    report.openAfterClick = await section.evaluate((details) => details.open);
    report.thinkingText = await section.locator(".thinking-text").textContent();
    report.elementsInside = await section.locator(".thinking-text *").evaluateAll((elements) => elements.map((e) => e.tagName.toLowerCase()));
    report.pwned = await page.evaluate(() => window.__pwned);
    report.orderInItem = await lastAnswer(page).evaluate((item) => [...item.children].map((child) => child.className));
  },

  /** The built-in tool's whole loop with the emulator: the model calls current_time, the
   * page runs it, sends the result back and shows the answer to it; then a reload. */
  async tool_loop(page, report) {
    const bodies = chatBodies(page);
    await ask(page, "What is the current time in UTC?");
    await page.waitForFunction(() => document.querySelectorAll("li.message.assistant").length >= 2, null, { timeout: STEP_MS });
    await waitSettled(page);
    report.bubbles = await assistantBubbles(page);
    const section = page.locator("details.tool-call").first();
    report.resultVisibleCollapsed = await section.locator(".tool-result").isVisible();
    await section.locator("summary").click();
    report.resultVisibleOpen = await section.locator(".tool-result").isVisible();
    report.userMessages = await page.locator("li.message.user").count();
    report.bodies = bodies;
    report.sendDisabled = await page.getByRole("button", { name: "Send" }).isDisabled();
    report.saved = await savedChat(page);
    await page.reload({ waitUntil: "load" });
    await page.waitForFunction(() => document.activeElement?.id === "input");
    report.afterReload = await assistantBubbles(page);
    report.bodiesAfterReload = bodies.length;
  },

  /** A scripted model whose tool calls carry markup (name and arguments, streamed slowly)
   * and bad input, and who calls again after every result, up to the page's bound. */
  async tool_markup(page, report) {
    const bodies = chatBodies(page);
    await page.evaluate(() => {
      window.__pwned = 0;
      // Every text the first call's arguments showed, to see them grow while they stream.
      window.__arguments = [];
      new MutationObserver(() => {
        const shown = document.querySelector("details.tool-call .tool-arguments")?.textContent;
        if (shown !== undefined && shown !== window.__arguments.at(-1)) window.__arguments.push(shown);
      }).observe(document.getElementById("messages"), { subtree: true, childList: true, characterData: true });
    });
    await ask(page, "Show me what you can call.");
    await page.waitForFunction(() => document.querySelectorAll("li.message.assistant").length >= 6, null, { timeout: STEP_MS });
    await waitSettled(page);
    report.bubbles = await assistantBubbles(page);
    report.argumentsSeen = await page.evaluate(() => window.__arguments);
    report.images = await page.locator("#messages img").count();
    report.bold = await page.locator("#messages b").count();
    report.pwned = await page.evaluate(() => window.__pwned);
    report.bodies = bodies;
    report.saved = await savedChat(page);
    report.sendDisabled = await page.getByRole("button", { name: "Send" }).isDisabled();
  },

  /** An answer cut at the length limit: its notice (also after a reload), Continue, the
   * joined answer, and the turn after it. */
  async cut_continue(page, report) {
    const bodies = chatBodies(page);
    await ask(page, "Tell me how the stream ends.");
    await waitSettled(page);
    report.cut = await endingState(page);
    report.contrast = await contrastAudit(page);
    report.savedCut = await savedChat(page);
    await reload(page);
    report.cutAfterReload = await endingState(page);
    await startContinuing(page);
    report.whileContinuing = await endingState(page);
    report.whileContinuing.state = await lastAnswer(page).getAttribute("data-state");
    await waitSettled(page);
    report.continued = await endingState(page);
    report.savedContinued = await savedChat(page);
    await reload(page);
    report.continuedAfterReload = await endingState(page);
    await ask(page, "And then?");
    await waitSettled(page);
    report.next = await endingState(page);
    report.bodies = bodies;
  },

  /** Continue when the server cannot be reached: the cut answer stays as it was. Then a
   * continuation that is cut again (its real answer's `done` rewritten to `length` on the
   * way: every continuation on the runtime gets the same script, which ends with `stop`),
   * continued once more. */
  async cut_again(page, report) {
    const bodies = chatBodies(page);
    report.rewritten = [];
    let continuations = 0;
    await page.route("**/api/chat", async (route) => {
      if (route.request().postDataJSON().messages.at(-2)?.role !== "assistant") return route.continue();
      continuations += 1;
      if (continuations === 1) return route.abort("connectionfailed");
      if (continuations > 2) return route.continue();
      const response = await route.fetch();
      const body = await response.text();
      report.rewritten.push(body.includes('"finish_reason":"stop"'));
      await route.fulfill({ response, body: body.replace('"finish_reason":"stop"', '"finish_reason":"length"') });
    });
    await ask(page, "Tell me how the stream ends.");
    await waitSettled(page);
    report.cut = await endingState(page);
    report.savedCut = await savedChat(page);
    await lastAnswer(page).getByRole("button", { name: "Continue" }).click();
    await waitSettled(page);
    report.unreached = await endingState(page);
    report.savedUnreached = await savedChat(page);
    report.cutAgain = await continueToEnd(page);
    report.continued = await continueToEnd(page);
    report.saved = await savedChat(page);
    report.bodies = bodies;
  },

  /** A reload while a cut answer is being continued: the page reads the continuation on
   * into the same answer, without asking again. */
  async continue_reload(page, report) {
    const bodies = chatBodies(page);
    // The continuation is asked for with a marked prompt, which the emulator answers with a
    // continuation held after its first piece (upstreams.py HELD_CONTINUE_PROMPT) until the
    // reload below: so the reload always finds it still being written.
    await page.route("**/api/chat", async (route) => {
      const body = route.request().postDataJSON();
      if (body.messages.at(-2)?.role !== "assistant") return route.continue();
      body.messages.at(-1).content += " [held]";
      return route.continue({ postData: JSON.stringify(body) });
    });
    await ask(page, "Tell me how the stream ends.");
    await waitSettled(page);
    report.cut = await endingState(page);
    await startContinuing(page);
    report.before = await endingState(page);
    report.pendingBefore = (await savedChat(page)).pending;
    await reload(page);
    report.afterReloadUsers = await page.locator("li.message.user .content").allTextContents();
    await release("continue-reload"); // upstreams.py HELD_CONTINUATION
    await waitSettled(page);
    report.after = await endingState(page);
    report.saved = await savedChat(page);
    report.bodies = bodies;
  },

  /** Answers cut short by the content filter, ended for an unknown reason, or with a
   * frame the Worker could not read: each notice, and again after a reload. */
  async filtered(page, report) {
    const bodies = chatBodies(page);
    await endAndReload(page, report, "Tell me what the filter stops.");
    await ask(page, "And then?");
    await waitSettled(page);
    report.bodies = bodies;
  },

  async unknown_end(page, report) {
    await endAndReload(page, report, "End for a reason of your own.");
  },

  async gapped(page, report) {
    await endAndReload(page, report, "Answer with a gap.");
  },

  /** An answer cut at the length limit with a frame lost: continued, the gap stays told. */
  async cut_gapped(page, report) {
    await ask(page, "Answer with a gap and run out.");
    await waitSettled(page);
    report.cut = await endingState(page);
    report.continued = await continueToEnd(page);
    report.saved = await savedChat(page);
    await reload(page);
    report.afterReload = await endingState(page);
  },

  /** An image attached with the button (and one removed before sending): the request's
   * parts, the answer naming it, the image in the user's bubble; the next turn re-sends it;
   * after a reload its thumbnail is shown and the next turn sends a placeholder. */
  async image_turns(page, report, _screenshot, baseUrl) {
    const bodies = chatBodies(page);
    const foreign = foreignRequests(page, baseUrl);
    const chooser = await chooseFiles(page, [file("pixels.png", "image/png", PIXELS_PNG), file("dot.gif", "image/gif", DOT_GIF)]);
    report.chooser = { multiple: chooser.isMultiple(), accept: await page.locator("#image-file").getAttribute("accept"),
      button: await page.getByRole("button", { name: "Attach images" }).count() };
    await waitAttached(page, 2);
    report.previews = await previews(page);
    await page.getByRole("button", { name: "Remove dot.gif" }).click();
    await waitAttached(page, 1);
    report.afterRemove = await previews(page);
    await ask(page, "What is in this picture?");
    await waitSettled(page);
    report.answer = await answerState(page);
    report.model = await page.locator("#model").textContent();
    report.attachedAfterSend = await attached(page).count();
    report.shown = await userImages(page);
    await ask(page, "And the colours?");
    await waitSettled(page);
    report.second = await answerState(page);
    report.saved = await savedChat(page);
    report.kept = await keptFigures(page);
    await reload(page);
    report.afterReload = await userImages(page);
    await ask(page, "Is it still there?");
    await waitSettled(page);
    report.third = await answerState(page);
    report.bodies = bodies;
    report.pngBytes = PIXELS_PNG.length;
    report.foreign = foreign;
  },

  /** Files the page does not send: too large, not an image (by name, and by its bytes
   * under an image's name), past the count or the total; each explained beside the
   * composer, nothing sent. Then a drop and a paste attach images, and a full composer
   * (eight images, two of them 3 MB of noise) is sent and answered. */
  async image_refused(page, report) {
    const bodies = chatBodies(page);
    const huge = Buffer.concat([PIXELS_PNG, Buffer.alloc(5 * 1024 * 1024 + 1 - PIXELS_PNG.length)]);
    await chooseFiles(page, [file("huge.png", "image/png", huge)]);
    report.oversized = await refusal(page, "huge.png");
    await chooseFiles(page, [file("notes.txt", "text/plain", Buffer.from("Just some notes.\n"))]);
    report.notImage = await refusal(page, "notes.txt");
    await chooseFiles(page, [file("photo.png", "image/png", Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>"))]);
    report.namedLikeAnImage = await refusal(page, "photo.png");
    await messageBox(page).press("Enter"); // nothing attached, nothing typed: nothing to send
    report.userMessages = await page.locator("li.message").count();

    const gif = DOT_GIF.toString("base64");
    await page.locator("#input").evaluate((input, data) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], "dropped.gif", { type: "image/gif" }));
      for (const type of ["dragenter", "dragover", "drop"]) input.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }, gif);
    await waitAttached(page, 1);
    report.noticeAfterDrop = await page.locator("#attach-notice").isVisible();
    report.pasteKeptDefault = await page.locator("#input").evaluate((input, data) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], "image.png", { type: "image/png" }));
      return input.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
    }, PIXELS_PNG.toString("base64"));
    await waitAttached(page, 2);
    report.droppedAndPasted = await previews(page);

    const noise = [noisePng(), noisePng(), noisePng()];
    report.noiseBytes = noise.map((buffer) => buffer.length);
    report.pngBytes = PIXELS_PNG.length;
    report.gifBytes = DOT_GIF.length;
    await chooseFiles(page, noise.map((buffer, index) => file(`noise-${index + 1}.png`, "image/png", buffer)));
    report.pastTotal = await refusal(page, "noise-3.png");
    await chooseFiles(page, Array.from({ length: 5 }, (_, index) => file(`dot-${index + 1}.gif`, "image/gif", DOT_GIF)));
    report.pastCount = await refusal(page, "dot-5.gif");
    report.bodiesBeforeSend = bodies.length;

    await ask(page, "Describe them all.");
    await waitSettled(page);
    report.answer = await answerState(page);
    report.shown = await userImages(page);
    report.kept = await keptFigures(page);
    report.sent = bodies.map((body) => body.messages.map((message) => (Array.isArray(message.content)
      ? message.content.map((part) => (part.type === "text" ? part : { type: part.type, url: part.image_url.url.slice(0, 22), chars: part.image_url.url.length }))
      : message.content)));
  },

  /** The Worker refuses the turn's image (the request names a model without vision, as a
   * client with a model setting could): the notice names the image and the model, and
   * the text and the image go back into the composer. */
  async image_model_refused(page, report) {
    const bodies = chatBodies(page);
    await page.route("**/api/chat", (route) => route.continue({
      postData: JSON.stringify({ ...route.request().postDataJSON(), model: "@cf/zai-org/glm-4.7-flash" }),
    }));
    await chooseFiles(page, [file("pixels.png", "image/png", PIXELS_PNG)]);
    await waitAttached(page, 1);
    await ask(page, "What is in this picture?");
    await waitSettled(page);
    report.answer = await endingState(page);
    report.refusedBubble = await page.locator("li.message.user").evaluate((item) => item.classList.contains("refused"));
    report.inputAfter = await messageBox(page).inputValue();
    report.previewsAfter = await previews(page);
    report.saved = await savedChat(page);
    report.bodies = bodies.length;
  },

  /** Two tabs on one chat: tab A streams a long answer while tab B, showing A's question as
   * soon as A saved it, asks another and is answered; when A's answer ends, its save finds
   * B's and keeps A's turns as a chat of their own, and A says so. */
  async two_tabs(page, report) {
    await ask(page, "Hello?");
    await waitSettled(page);
    const chatId = await page.evaluate(() => JSON.parse(sessionStorage.getItem("chat-page-v1")).chatId);
    const other = await page.context().newPage();
    try {
      await other.goto(page.url(), { waitUntil: "load" });
      await other.waitForFunction(() => document.activeElement?.id === "input");
      await other.locator("#chats summary").click();
      await other.locator(`button.chat-link[data-chat-id="${chatId}"]`).click();
      await ask(page, "Tell me a long story.");
      await waitForFirstText(page);
      await other.waitForFunction(() => document.querySelectorAll("li.message.user").length === 2); // A's question, adopted
      report.otherStatus = await other.locator("#status").textContent();
      await ask(other, "Hello again?");
      await waitSettled(other);
      await release("two-tabs-long-answer");
      await waitSettled(page);
      const users = (tab) => tab.locator("li.message.user .content").allTextContents();
      report.a = { users: await users(page), notice: await page.locator("#storage-notice").textContent(),
                   noticeShown: await page.locator("#storage-notice").isVisible(),
                   chatId: await page.evaluate(() => JSON.parse(sessionStorage.getItem("chat-page-v1")).chatId) };
      report.b = { users: await users(other) };
      report.original = chatId;
      report.kept = await page.evaluate((ids) => Object.fromEntries(ids.map((id) => [id,
        JSON.parse(localStorage.getItem(`chat-page-chat-v1:${id}`) ?? "null")?.entries.map((entry) => [entry.role, entry.content])])),
      [chatId, report.a.chatId]);
    } finally {
      await other.close();
    }
  },

  /** chats.js's saves: a conflict with another tab's save, a chat too large, a full storage. */
  async chat_store(page, report) {
    Object.assign(report, await page.evaluate(async () => {
      const { ChatStore } = await import("/chats.js");
      const items = new Map();
      let full = false;
      const local = { getItem: (key) => items.get(key) ?? null, removeItem: (key) => items.delete(key),
                      setItem: (key, value) => { if (full) throw new DOMException("quota", "QuotaExceededError"); items.set(key, String(value)); } };
      const session = { getItem: () => null, setItem: () => {}, removeItem: () => {} };
      const [a, b] = [new ChatStore(local, session), new ChatStore(local, session)];
      const turn = (text) => [{ role: "user", content: text }, { role: "assistant", content: `About ${text}.` }];
      const first = { id: "shared", entries: turn("one") };
      const results = { first: a.save(first) };
      const inA = a.load("shared");
      const inB = b.load("shared");
      inB.entries.push(...turn("two, in B"));
      results.b = b.save(inB);
      inA.entries.push(...turn("two, in A"));
      results.aConflict = a.save(inA);
      const forked = a.fork(inA);
      results.aForked = a.save(forked);
      results.kept = { shared: b.load("shared").entries.map((entry) => entry.content), forked: a.load(forked.id).entries.map((entry) => entry.content) };
      results.again = b.save({ ...inB, entries: [...inB.entries, ...turn("three, in B")] }); // its own save: no conflict
      results.tooLarge = a.save({ id: "huge", entries: turn("x".repeat(1_000_001)) });
      full = true;
      results.full = a.save({ id: "another", entries: turn("y") });
      return results;
    }));
  },

  /** chats.js keeping a chat of many images within its bound, and refusing a kept image
   * that is not a data: URL (storage can be edited by hand). */
  async image_storage(page, report) {
    Object.assign(report, await page.evaluate(async () => {
      const { ChatStore } = await import("/chats.js");
      const storage = () => {
        const items = new Map();
        return { items, getItem: (key) => items.get(key) ?? null, setItem: (key, value) => items.set(key, String(value)), removeItem: (key) => items.delete(key) };
      };
      const local = storage();
      const store = new ChatStore(local, storage());
      const thumb = `data:image/webp;base64,${"A".repeat(47_976)}`;
      const entries = [];
      for (let turn = 0; turn < 30; turn++) {
        entries.push({ role: "user", content: `Picture ${turn}`, images: [
          { id: `image-${turn}`, name: `picture-${turn}.png`, type: "image/png", width: 4000, height: 3000, size: 4_000_000, thumb }] });
        entries.push({ role: "assistant", content: `I see picture ${turn}.` });
      }
      const chat = { id: "many-images", entries };
      const saved = store.save(chat);
      const kept = local.getItem("chat-page-chat-v1:many-images") ?? "";
      const loaded = store.load("many-images");
      const withThumb = loaded.entries.filter((entry) => entry.images?.[0]?.thumb).map((entry) => entry.content);
      const hostile = structuredClone(entries.slice(0, 2));
      hostile[0].images[0].thumb = "https://images.example/pixel.png";
      local.setItem("chat-page-chat-v1:hostile", JSON.stringify({ entries: hostile }));
      return {
        saved, keptChars: kept.length, thumbChars: thumb.length, withThumb,
        onScreenKeepsAll: chat.entries.filter((entry) => entry.images?.[0]?.thumb).length,
        hostileLoaded: store.load("hostile"),
      };
    }));
  },

  /** A phone-sized screen: nothing overflows sideways, the controls stay on screen. */
  async settings(page, report) {
    // Before any answer: the model comes from GET /v1/models.
    await page.waitForFunction(() => document.getElementById("model").textContent !== "", null, { timeout: 15000 });
    report.model = await page.locator("#model").textContent();
    const isOpen = () => page.evaluate(() => document.getElementById("settings").open);
    const summary = page.locator("#settings summary");
    await summary.click();
    report.openedByClick = await isOpen();
    await page.keyboard.press("Escape");
    report.afterEscape = { open: await isOpen(), focusOnSummary: await page.evaluate(() => document.activeElement?.tagName === "SUMMARY") };
    await summary.click();
    await page.locator("#transcript").click({ position: { x: 10, y: 10 } });
    report.openAfterOutsideClick = await isOpen();
    report.send = await page.evaluate(() => {
      const style = getComputedStyle(document.getElementById("send"));
      return { color: style.color, background: style.backgroundColor };
    });
  },

  async phone(page, report) {
    await page.setViewportSize({ width: 360, height: 700 });
    await ask(page, "A long unbroken token: " + "x".repeat(200));
    await waitSettled(page);
    report.answer = await answerState(page);
    report.overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    const box = async (locator) => locator.boundingBox();
    report.viewport = page.viewportSize();
    report.input = await box(messageBox(page));
    report.send = await box(page.getByRole("button", { name: "Send" }));
  },
};

// --- main ----------------------------------------------------------------------------------

async function runScenario(context, baseUrl, name, screenshot) {
  const report = { pageErrors: [], consoleErrors: [] };
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_MS);
  page.on("pageerror", (error) => report.pageErrors.push(String(error)));
  page.on("console", (message) => { if (message.type() === "error") report.consoleErrors.push(message.text()); });
  page.on("dialog", (dialog) => { report.dialog = dialog.message(); dialog.dismiss(); });
  try {
    const response = await page.goto(baseUrl + "/", { waitUntil: "load" });
    report.pageStatus = response.status();
    report.pageType = response.headers()["content-type"];
    await page.waitForFunction(() => document.activeElement?.id === "input"); // app.js ran
    await scenarios[name](page, report, screenshot, baseUrl);
  } catch (error) {
    report.failed = String(error.stack || error);
  } finally {
    await page.close().catch(() => {});
  }
  return report;
}

async function main() {
  const [baseUrl, names, screenshot] = process.argv.slice(2);
  const wanted = (names || "").split(",").filter(Boolean);
  if (!baseUrl || !wanted.length || wanted.some((name) => !(name in scenarios))) {
    console.error(`usage: page_driver.mjs BASE_URL SCENARIO[,SCENARIO...] [SCREENSHOT]; scenarios: ${Object.keys(scenarios).join(", ")}`);
    return 2;
  }
  const result = { scenarios: {} };
  const profile = mkdtempSync(join(tmpdir(), "chat-page-chromium-"));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS,
      viewport: { width: 820, height: 860 }, deviceScaleFactor: 1, colorScheme: "light",
      permissions: ["clipboard-read", "clipboard-write"],
    });
    // Each scenario has its own page; they run side by side against the same runtime.
    const reports = await Promise.all(wanted.map((name) => runScenario(context, baseUrl, name, screenshot)));
    wanted.forEach((name, index) => { result.scenarios[name] = reports[index]; });
    return reports.some((report) => report.failed) ? 1 : 0;
  } catch (error) {
    result.failed = String(error.stack || error);
    return 1;
  } finally {
    console.log(JSON.stringify(result));
    await context?.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  }
}

setTimeout(() => {
  console.log(JSON.stringify({ failed: `watchdog: no result within ${WATCHDOG_MS} ms` }));
  process.exit(1);
}, WATCHDOG_MS).unref();

process.exitCode = await main();
