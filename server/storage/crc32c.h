/* crc32c.h — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of every record in the data dir. Table-driven, slicing by 8.
 *
 * Why our own: Debian 12 packages no C library for CRC-32C (google/crc32c is
 * not packaged; zlib's crc32 is the other polynomial, and the kernel's
 * libcrc32c is not for user space), and the whole job is 60 lines. */
#ifndef CROWD_STORAGE_CRC32C_H
#define CROWD_STORAGE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/** Continue a CRC-32C: crc32c(0, data, n) for a fresh one. crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t crc32c(uint32_t crc, const void *data, size_t n);

#endif
