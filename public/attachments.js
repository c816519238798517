// The images waiting in the composer: attached with the button (a hidden file input),
// pasted, or dropped on the composer; each shown as a thumbnail with a remove button
// until the turn is sent. A file the page will not send is explained beside the composer
// (images.js says why) and never attached. The list is this object's alone: app.js takes
// it when a turn is sent and gives it back when the Worker refused the turn.
import { AttachRefusal, describe, readAttachment } from "./images.js";

export class Attachments {
  /** `form`: the composer, where files are dropped; `input`: the message box, where they
   * are pasted; `button` opens `fileInput`; `list` shows the thumbnails; `notice` the
   * files refused. */
  constructor({ form, input, button, fileInput, list, notice }) {
    this.items = []; // [{image, dataUrl}], in the order attached
    this.list = list;
    this.notice = notice;
    this.reading = Promise.resolve(); // files are read one after another, in order
    button.addEventListener("click", () => fileInput.click());
    fileInput.addEventListener("change", () => {
      this.add([...fileInput.files]);
      fileInput.value = ""; // the same file can be chosen again
    });
    input.addEventListener("paste", (event) => {
      const files = [...(event.clipboardData?.items ?? [])].filter((item) => item.kind === "file").map((item) => item.getAsFile()).filter(Boolean);
      if (!files.length) return;
      // A pasted picture comes as a file; pasted text still goes into the box.
      if (!event.clipboardData.types.includes("text/plain")) event.preventDefault();
      this.add(files);
    });
    const carriesFiles = (event) => event.dataTransfer?.types.includes("Files");
    form.addEventListener("dragover", (event) => {
      if (!carriesFiles(event)) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = "copy";
      form.classList.add("dropping");
    });
    form.addEventListener("dragleave", (event) => {
      if (!form.contains(event.relatedTarget)) form.classList.remove("dropping");
    });
    form.addEventListener("drop", (event) => {
      form.classList.remove("dropping");
      if (!carriesFiles(event)) return;
      event.preventDefault();
      this.add([...event.dataTransfer.files]);
    });
    // A file dropped beside the composer would make the browser open it, leaving the chat.
    for (const type of ["dragover", "drop"]) {
      document.addEventListener(type, (event) => {
        if (carriesFiles(event) && !form.contains(event.target)) event.preventDefault();
      });
    }
    list.addEventListener("click", (event) => {
      const button = event.target.closest("button.remove-image");
      if (!button) return;
      const index = this.items.findIndex((item) => item.image.id === button.dataset.imageId);
      if (index >= 0) this.items.splice(index, 1);
      this.draw();
      input.focus();
    });
  }

  get count() {
    return this.items.length;
  }

  /** Reads and checks `files`, then attaches those that pass; the others are explained. */
  add(files) {
    this.reading = this.reading.then(async () => {
      const refused = [];
      for (const file of files) {
        try {
          this.items.push(await readAttachment(file, this.items.map((item) => item.image)));
        } catch (problem) {
          if (!(problem instanceof AttachRefusal)) throw problem;
          refused.push(problem.message);
        }
      }
      this.draw();
      this.explain(refused);
    }).catch((problem) => {
      this.draw();
      this.explain([`A file could not be read: ${problem?.message ?? problem}`]);
    });
    return this.reading;
  }

  /** Resolves once every file given so far is read. */
  ready() {
    return this.reading;
  }

  /** The attached images ([{image, dataUrl}]), now no longer in the composer. */
  take() {
    const items = this.items;
    this.items = [];
    this.draw();
    this.explain([]);
    return items;
  }

  /** Puts images back (a turn the Worker refused), unless others are attached by now. */
  restore(items) {
    if (this.items.length) return;
    this.items = items;
    this.draw();
  }

  draw() {
    this.list.replaceChildren(...this.items.map(({ image }) => {
      const item = document.createElement("li");
      item.className = "attachment";
      const thumb = document.createElement("img");
      thumb.src = image.thumb; // a data: URL this page made (images.js)
      thumb.alt = `${image.name}, ${describe(image)}`;
      thumb.title = image.name;
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "remove-image";
      remove.dataset.imageId = image.id;
      remove.setAttribute("aria-label", `Remove ${image.name}`);
      remove.title = `Remove ${image.name}`;
      remove.textContent = "×";
      item.append(thumb, remove);
      return item;
    }));
    this.list.hidden = this.items.length === 0;
  }

  /** The files just refused, one line each, announced; nothing when none was. */
  explain(lines) {
    this.notice.replaceChildren(...lines.map((line) => {
      const text = document.createElement("span");
      text.textContent = line; // a file's name: text, never HTML
      return text;
    }));
    this.notice.hidden = lines.length === 0;
  }
}
