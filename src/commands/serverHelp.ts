/** The help of `mcp-warden server` (its own module: the command table and the command both show it). */
export const SERVER_HELP = `Usage: mcp-warden server add NAME [--config FILE] [--env K=V ...] [--envfile FILE] -- COMMAND [ARGS ...]
       mcp-warden server add NAME [--config FILE] --url URL [--header K=V ...]
       mcp-warden server remove|enable|disable NAME [--config FILE]
       mcp-warden server list [--config FILE] [--json]

Manages the servers of a config file. Each edit changes that one entry in place: comments, key
order and the formatting of every other entry are kept. The edited file is checked as
mcp-warden check would (and against the managed settings) before it is written; an edit that
would make it invalid, a name already taken or a server the managed settings block is refused
and the file is left as it was. The file is replaced atomically and the previous one is kept as
FILE.bak. A gateway serving the file applies the edit when it reloads its config.

  add NAME -- COMMAND ARGS   a stdio server (everything after -- is its command line)
    --env K=V                an environment variable for it (repeatable)
    --envfile FILE           a file of K=V lines it also gets (relative to the config's
                             folder); --env-file too, where Node.js does not take it for itself
  add NAME --url URL         a Streamable HTTP server
    --header K=V             an HTTP header sent to it (repeatable)
  remove NAME                take the server out (with the comment lines right above it)
  disable NAME               keep its entry but do not start it (disabled: true)
  enable NAME                start it again (removes disabled)
  list                       every server: transport, command or URL, enabled, start-up
                             settings, the tools and last error last recorded (audit log,
                             pins file), and its live state in each gateway serving the
                             config now (running, asleep, starting, needs sign-in, failed;
                             pid, tools, since when); a gateway that is gone is called stale
    --json                   as JSON

Exit codes: 0 done (or nothing to change); 2 bad usage, an unknown server, or an edit that was
refused (nothing written).`;
