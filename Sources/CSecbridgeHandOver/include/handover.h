#ifndef SECBRIDGE_HANDOVER_H
#define SECBRIDGE_HANDOVER_H

/* The commands `secbridge` hands to `secbridge-tools` (SecbridgeCLI's toolCommandSummaries, in
   the same order; SecbridgeCLITests checks that the two lists agree), NULL-terminated. */
const char *const *secbridge_tool_commands(void);

#endif
