// The page's built-in tools: what it offers the model (`TOOL_DEFINITIONS`, sent as `tools`
// with every request, in OpenAI's function-tool shape) and how it runs a call the model
// makes. They run here, in the browser; the result goes back to the model as a `tool`
// message. One example for now: the current time in a time zone.

/** A call the page cannot run as asked; its message goes back to the model. */
class ToolError extends Error {}

const NAME_SHOWN = 100; // characters of a model-given name or zone quoted back in an error

const quoted = (text) => JSON.stringify(text.length > NAME_SHOWN ? `${text.slice(0, NAME_SHOWN)}…` : text);

/** The wall-clock time in an IANA zone, from this browser's clock. */
const currentTime = {
  definition: {
    type: "function",
    function: {
      name: "current_time",
      description: "The current date and time in a time zone, from the user's clock. Use it whenever the answer depends on today's date or the time of day.",
      parameters: {
        type: "object",
        properties: {
          timezone: {
            type: "string",
            description: "An IANA time zone name, such as \"Europe/Paris\", \"America/New_York\" or \"UTC\".",
            examples: ["UTC"],
          },
        },
        required: ["timezone"],
        additionalProperties: false,
      },
    },
  },

  /** Returns the time as JSON text; throws ToolError for a zone Intl does not know. */
  run(input) {
    const zone = input.timezone;
    if (typeof zone !== "string" || !zone) throw new ToolError("\"timezone\" must be an IANA time zone name, such as \"UTC\".");
    let format;
    try {
      format = new Intl.DateTimeFormat("en-US", {
        timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", weekday: "long",
        hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "longOffset",
      });
    } catch {
      throw new ToolError(`unknown time zone ${quoted(zone)}: use an IANA name, such as "Europe/Paris" or "UTC".`);
    }
    const parts = Object.fromEntries(format.formatToParts(new Date()).map((part) => [part.type, part.value]));
    // longOffset is "GMT+05:30", or "GMT" alone for a zero offset.
    const offset = parts.timeZoneName === "GMT" ? "+00:00" : parts.timeZoneName.slice(3);
    const time = `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`;
    return JSON.stringify({ timezone: format.resolvedOptions().timeZone, time, weekday: parts.weekday });
  },
};

const TOOLS = new Map([currentTime].map((tool) => [tool.definition.function.name, tool]));

export const TOOL_DEFINITIONS = [...TOOLS.values()].map((tool) => tool.definition);

/** Error results start with this, so that a page restored from its history can tell them. */
export const ERROR_PREFIX = "Error: ";

/**
 * Runs one complete call ({name, input, input_error}, as chat-stream.js gives it). Returns
 * {content, error}: the text sent back to the model as the `tool` message, and whether
 * it reports a failure (an unknown tool, arguments that are not a JSON object, input the
 * tool refuses), which is sent back as text starting with ERROR_PREFIX.
 */
export function runToolCall(call) {
  const failed = (why) => ({ content: ERROR_PREFIX + why, error: true });
  const tool = TOOLS.get(call.name);
  if (tool === undefined) return failed(`there is no tool named ${quoted(call.name)}; the tools are ${[...TOOLS.keys()].join(", ")}.`);
  if (call.input === null) return failed(`invalid arguments (${call.input_error})`);
  try {
    return { content: tool.run(call.input), error: false };
  } catch (error) {
    if (error instanceof ToolError) return failed(error.message);
    throw error; // a bug in the tool: surface it
  }
}
