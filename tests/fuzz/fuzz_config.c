/* fuzz_config.c — the INI configuration file as crowd-server --config reads
 * it (inih + every option's value parser), then the cross-option validation.
 * The input is the file, written to a memfd and read through its path. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz_config.ini", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	server_config cfg;
	config_init(&cfg);
	char err[512];
	if (config_load_file(&cfg, path, err, sizeof err) == 0)
		(void)config_validate(&cfg, err, sizeof err);
	config_free(&cfg);
	return 0;
}
