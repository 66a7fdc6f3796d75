#!/bin/sh
# A confirmation hook for mcp-warden on macOS: shows a dialog (AppleScript, through osascript)
# asking whether a tool call may run. mcp-warden writes one JSON object describing the call to stdin:
#
#   {"server": "fs", "tool": "write_file", "exposedName": "fs__write_file",
#    "arguments": {"path": "notes.txt", "content": "..."}, "reason": "policy rule ..."}
#
# and runs the call only if this script exits 0. Any other exit (Deny, the dialog timed out,
# input that is not JSON) means no.
#
# Use it from proxy.config.yaml:
#
#   confirmation:
#     methods: [elicitation, command]   # ask inside the host first, then this dialog
#     timeout: 60s
#     command:
#       command: /path/to/examples/confirm-osascript.sh
#
# The arguments are shown as mcp-warden received them (not redacted): this hook is yours.
set -eu

# Node.js is here whenever mcp-warden is, so it reads the JSON; the text is cut to keep the dialog small.
question=$(node -e '
let input = "";
process.stdin.on("data", (d) => (input += d)).on("end", () => {
  const call = JSON.parse(input);
  if (typeof call.tool !== "string" || typeof call.server !== "string") process.exit(1);
  const args = JSON.stringify(call.arguments ?? {}, null, 2);
  process.stdout.write(`Allow the tool "${call.tool}" of the server "${call.server}" to run?\n\n` +
    `Why you are asked: ${call.reason ?? "(no reason given)"}\n\nArguments:\n` +
    (args.length > 1500 ? `${args.slice(0, 1500)}\n...` : args));
});
')

# The question is passed as an argument, never pasted into the script, so nothing in it is run.
# "Deny" is the cancel button, which makes osascript exit non-zero; so does giving up after 55 s
# (keep that below confirmation.timeout).
exec osascript \
  -e 'on run argv' \
  -e 'set answer to display dialog (item 1 of argv) with title "mcp-warden" buttons {"Deny", "Allow"} default button "Deny" cancel button "Deny" with icon caution giving up after 55' \
  -e 'if gave up of answer or button returned of answer is not "Allow" then error number -128' \
  -e 'end run' \
  "$question"
