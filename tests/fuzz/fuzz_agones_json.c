/* fuzz_agones_json.c — the Agones SDK sidecar's GameServer JSON (GET
 * /gameserver), as the Agones client reads it at start-up. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "agones.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	crowd_agones_gameserver gs;
	memset(&gs, 0xA5, sizeof gs); /* the parser must not rely on a zeroed output */
	if (crowd_agones_parse_gameserver((const char *)data, size, &gs) == 0) {
		/* what it returns is bounded and terminated */
		if (strnlen(gs.name, sizeof gs.name) == sizeof gs.name || strnlen(gs.state, sizeof gs.state) == sizeof gs.state ||
		    gs.label_count > CROWD_AGONES_MAX_LABELS)
			__builtin_trap();
	}
	return 0;
}
