// libedit (Debian's libedit2, headers from libedit-dev) for `secbridge shell`: line editing and
// history through libedit's readline-compatible interface (<editline/readline.h>).
//
// libedit is opened with dlopen when an interactive shell starts, not linked: the lean `secbridge`
// binary must start within 1.5x of `pcsc_scan -r` (docs/test-infrastructure.md, "Start-up time"),
// and linking libedit would make every command load it and its dependencies (libtinfo, libbsd,
// libmd). Without libedit2 installed the shell still works, reading plain lines.
//
// Each function returns -1 (or NULL) when libedit could not be opened. No logic lives here beyond
// finding the functions.
#ifndef CEDITLINE_H
#define CEDITLINE_H

#include <editline/readline.h>

// Opens libedit.so.2 (once) and finds its functions. Returns 0 on success, -1 otherwise; then
// ceditline_error() says why (dlerror's text).
int ceditline_open(void);
const char *ceditline_error(void);

// readline(3) of libedit: reads one line with editing, prompt `prompt`; the line without its
// newline, to be freed with free(), or NULL at end of input (Ctrl-D on an empty line).
char *ceditline_readline(const char *prompt);
// ceditline_readline with SIGINT caught while it reads: Ctrl-C ends the read with NULL and
// *was_interrupted set to 1 (the line typed so far is dropped); SIGINT's disposition is restored.
char *ceditline_readline_interruptible(const char *prompt, int *was_interrupted);
// add_history(3): appends `line` to the in-memory history.
int ceditline_add_history(const char *line);
// stifle_history(3): keep at most `count` entries.
int ceditline_stifle_history(int count);
// read_history(3) / write_history(3): load or save the history file at `path` (0 on success).
int ceditline_read_history(const char *path);
int ceditline_write_history(const char *path);
// The number of entries in the in-memory history (history_length), and entry `offset` from the
// oldest (0), through history_get(history_base + offset); NULL when out of range.
int ceditline_history_length(void);
const char *ceditline_history_entry(int offset);
// clear_history(3).
int ceditline_clear_history(void);

#endif
