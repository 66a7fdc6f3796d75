#!/bin/sh
# A confirmation hook for mcp-warden on a Linux desktop: shows a zenity dialog asking whether a
# tool call may run. mcp-warden writes one JSON object describing the call to stdin:
#
#   {"server": "fs", "tool": "write_file", "exposedName": "fs__write_file",
#    "arguments": {"path": "notes.txt", "content": "..."}, "reason": "policy rule ..."}
#
# and runs the call only if this script exits 0. Any other exit (Deny, the dialog closed or timed
# out, zenity missing, input that is not JSON) means no.
#
# Use it from proxy.config.yaml. The hook gets a minimal environment (HOME, PATH, USER, ...), not
# the gateway's whole one, so pass what a dialog needs to reach your display:
#
#   confirmation:
#     methods: [elicitation, command]   # ask inside the host first, then this dialog
#     timeout: 60s
#     command:
#       command: /path/to/examples/confirm-zenity.sh
#       env: { DISPLAY: '${DISPLAY:-:0}', WAYLAND_DISPLAY: '${WAYLAND_DISPLAY:-}', XDG_RUNTIME_DIR: '${XDG_RUNTIME_DIR:-}' }
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
  const text = `Allow the tool "${call.tool}" of the server "${call.server}" to run?\n\n` +
    `Why you are asked: ${call.reason ?? "(no reason given)"}\n\nArguments:\n` +
    (args.length > 1500 ? `${args.slice(0, 1500)}\n...` : args);
  // zenity reads Pango markup: escape it so the arguments are shown as they are.
  process.stdout.write(text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"));
});
')

# Exits 0 on Allow, 1 on Deny or when closed, 5 when it times out: each but 0 means no.
# Keep --timeout below confirmation.timeout so the dialog goes away when mcp-warden stops waiting.
exec zenity --question --title="mcp-warden: allow this tool call?" --text="$question" \
  --ok-label=Allow --cancel-label=Deny --width=520 --timeout=55
