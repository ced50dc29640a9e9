/* The hand-over of `secbridge` to `secbridge-tools`, before anything of Swift runs.

   `secbridge` (no Foundation) runs readers, send, control, decode, monitor, run and shell itself
   and hands every other command to `secbridge-tools`, beside it or else in PATH, with the same
   arguments (docs/test-infrastructure.md, "Start-up time: one binary or two"). For those commands
   the lean binary's own start is pure overhead, so this constructor does the hand-over first:
   glibc calls the main program's init_array functions with (argc, argv, envp), and priority 101
   puts this one ahead of the Swift runtime's C++ static initializers (the backtracer's path
   look-up, the command line's /proc/self reading), which the exec would throw away.

   It acts only when this process's binary is named `secbridge` and its first argument names a
   tool command. When neither exec works it returns, and Swift's SecbridgeCLI.main tries the same
   hand-over again and prints the error that says what to install (Root.swift, runTools). */
#include "handover.h"

#include <string.h>
#include <unistd.h>

static const char *const tool_commands[] = {
    "replay", "simulate", "credentials", "emulate", "read", "demo", "transcript", "capture",
    "selftest", "doctor", "reset", "write-ndef", "write-dump", "serve", NULL,
};

const char *const *secbridge_tool_commands(void) { return tool_commands; }

static const char tools_name[] = "secbridge-tools";

__attribute__((constructor(101))) static void secbridge_hand_over(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc < 2 || argv == NULL || argv[1] == NULL) return;
    int tool = 0;
    for (const char *const *name = tool_commands; *name != NULL; name++) {
        if (strcmp(argv[1], *name) == 0) { tool = 1; break; }
    }
    if (!tool) return;
    char path[4096];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - sizeof tools_name - 1);
    if (length <= 0 || (size_t)length >= sizeof path - sizeof tools_name - 1) return;
    path[length] = '\0';
    char *slash = strrchr(path, '/');
    if (slash == NULL || strcmp(slash + 1, "secbridge") != 0) return;
    memcpy(slash + 1, tools_name, sizeof tools_name);
    char *program = argv[0];
    argv[0] = path;
    execv(path, argv);
    /* Not beside this binary: the one in PATH, as an installed copy on its own would find it. */
    execvp(tools_name, argv);
    argv[0] = program;
}
