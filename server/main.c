/* main.c — crowd-server: parse the configuration, then either run headless
 * (--headless-ticks N) or serve until SIGINT/SIGTERM. */
#include <signal.h>
#include <stdio.h>

#include <uv.h>

#include "agones_server.h"
#include "config.h"
#include "http_ext.h"
#include "log.h"
#include "server.h"

int main(int argc, char **argv)
{
	/* A peer that vanished must give EPIPE on write, not kill the process. */
	signal(SIGPIPE, SIG_IGN);

	server_config cfg;
	config_init(&cfg);
	char err[512];
	int rc = config_parse_args(&cfg, argc, argv, err, sizeof err);
	if (rc != 0) {
		if (rc < 0)
			fprintf(stderr, "crowd-server: %s\n", err);
		config_free(&cfg);
		return rc > 0 ? 0 : 2;
	}
	log_set_level((log_level)cfg.log_level);
	if (cfg.config_path[0])
		log_info("configuration read from %s", cfg.config_path);

	if (cfg.headless_ticks > 0) {
		rc = server_run_headless(&cfg);
		config_free(&cfg);
		return rc;
	}

	uv_loop_t *loop = uv_default_loop();
	static server srv;
	int exit_code = 0;
	if (server_init(&srv, loop, &cfg) != 0) {
		server_destroy(&srv);
		config_free(&cfg);
		return 1;
	}

	/* Extensions on the same loop (HTTP/metrics, Agones) register here, before server_start:
	 *     server_add_extension(&srv, &(server_extension){...}); */
	if (http_ext_register(&srv, NULL) != 0)
		log_warn("HTTP extension not registered");
	/* After HTTP: Agones says Ready only once every listener is up. */
	if (agones_server_register(&srv) != 0)
		log_warn("Agones extension not registered");

	if (server_start(&srv) != 0) {
		exit_code = 1;
		server_shutdown(&srv);
	}
	uv_run(loop, UV_RUN_DEFAULT);
	server_destroy(&srv);
	if (uv_loop_close(loop) != 0)
		log_warn("the event loop still had open handles at exit");
	config_free(&cfg);
	return exit_code;
}
