// See include/ceditline.h: libedit's readline-compatible functions, found with dlopen/dlsym.
#include "ceditline.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void *library;
static const char *failure;

static char *(*p_readline)(const char *);
static int (*p_add_history)(const char *);
static void (*p_stifle_history)(int);
static int (*p_read_history)(const char *);
static int (*p_write_history)(const char *);
static HIST_ENTRY *(*p_history_get)(int);
static void (*p_clear_history)(void);
static int *p_history_length;
static int *p_history_base;
static void (*p_using_history)(void);

int ceditline_open(void) {
    if (library != NULL) return 0;
    if (failure != NULL) return -1;
    void *handle = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        failure = dlerror();
        return -1;
    }
#define FIND(name) \
    *(void **)(&p_##name) = dlsym(handle, #name); \
    if (p_##name == NULL) { failure = "libedit.so.2 lacks " #name; dlclose(handle); return -1; }
    FIND(readline)
    FIND(add_history)
    FIND(stifle_history)
    FIND(read_history)
    FIND(write_history)
    FIND(history_get)
    FIND(clear_history)
    FIND(history_length)
    FIND(history_base)
    FIND(using_history)
#undef FIND
    library = handle;
    // libedit's own signal handling re-raises SIGINT after restoring the terminal, which ends the
    // process; ceditline_readline_interruptible takes SIGINT itself instead.
    int *catch_signals = (int *)dlsym(handle, "rl_catch_signals");
    if (catch_signals != NULL) *catch_signals = 0;
    p_using_history();
    return 0;
}

const char *ceditline_error(void) { return failure; }

char *ceditline_readline(const char *prompt) { return library ? p_readline(prompt) : NULL; }

static volatile sig_atomic_t interrupted;
static void note_interrupt(int signal) {
    (void)signal;
    interrupted = 1;
}

char *ceditline_readline_interruptible(const char *prompt, int *was_interrupted) {
    *was_interrupted = 0;
    if (!library) return NULL;
    struct sigaction mine, previous;
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = note_interrupt;
    sigemptyset(&mine.sa_mask);
    mine.sa_flags = 0;  // no SA_RESTART: the read(2) in libedit returns EINTR
    interrupted = 0;
    sigaction(SIGINT, &mine, &previous);
    char *line = p_readline(prompt);
    sigaction(SIGINT, &previous, NULL);
    if (interrupted) {
        *was_interrupted = 1;
        free(line);
        return NULL;
    }
    return line;
}
int ceditline_add_history(const char *line) { return library ? p_add_history(line) : -1; }
int ceditline_stifle_history(int count) {
    if (!library) return -1;
    p_stifle_history(count);
    return 0;
}
int ceditline_read_history(const char *path) { return library ? p_read_history(path) : -1; }
int ceditline_write_history(const char *path) { return library ? p_write_history(path) : -1; }
int ceditline_history_length(void) { return library ? *p_history_length : -1; }
const char *ceditline_history_entry(int offset) {
    if (!library) return NULL;
    HIST_ENTRY *entry = p_history_get(*p_history_base + offset);
    return entry ? entry->line : NULL;
}
int ceditline_clear_history(void) {
    if (!library) return -1;
    p_clear_history();
    return 0;
}
