// SPDX-License-Identifier: GPL-2.0-only
#include "launch.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jobdir.h"
#include "registry.h"
#include "util.h"

/* What the user's mpirun arguments already say. */
struct said {
	bool pml, btl, shmem, gds, bind;
	const char *rsh;		/* plm_rsh_agent */
	const char *btl_value;
	bool fork_agent;
};

static bool is(const char *arg, const char *a, const char *b)
{
	return !strcmp(arg, a) || (b && !strcmp(arg, b));
}

static void add_node(struct job_info *j, const char *name, int slots)
{
	if (!*name || jobinfo_node(j, name))
		return;
	j->nodes = xrealloc(j->nodes, (j->nnodes + 1) * sizeof(*j->nodes));
	snprintf(j->nodes[j->nnodes].name, JOB_NAME, "%s", name);
	j->nodes[j->nnodes++].slots = slots;
}

/* --host a:2,b */
static void host_list(struct job_info *j, const char *list)
{
	char *copy = xstrdup(list), *save = NULL;

	for (char *h = strtok_r(copy, ",", &save); h;
	     h = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(h, ':');
		long slots = 0;

		/* name:N, never an IPv6 address's colons */
		if (colon && strchr(h, ':') == colon &&
		    util_parse_long(colon + 1, 1, 1 << 20, &slots))
			*colon = '\0';
		add_node(j, h, (int)slots);
	}
	free(copy);
}

/* Lines "name [slots=N] ...", '#' comments. */
static void host_file(struct job_info *j, const char *path)
{
	char *text = util_read_file(path, NULL), *save = NULL;

	for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save)) {
		char name[JOB_NAME], *s;
		int slots = 0;

		*strchrnul(l, '#') = '\0';
		if (sscanf(l, "%127s", name) != 1)
			continue;
		if ((s = strstr(l, "slots=")))
			slots = atoi(s + 6);
		add_node(j, name, slots > 0 ? slots : 0);
	}
	free(text);
}

static void scan_args(char **args, struct said *s, struct job_info *j)
{
	for (size_t i = 0; args[i]; i++) {
		const char *a = args[i], *v = args[i + 1];

		if (!v)
			break;
		if (is(a, "--mca", "-mca") || is(a, "--gmca", "-gmca")) {
			const char *val = args[i + 2] ? args[i + 2] : "";

			s->pml |= !strcmp(v, "pml");
			s->shmem |= !strcmp(v, "shmem");
			s->fork_agent |= !strcmp(v, "orte_fork_agent");
			if (!strcmp(v, "btl")) {
				s->btl = true;
				s->btl_value = val;
			}
			if (!strcmp(v, "plm_rsh_agent"))
				s->rsh = val;
			i += 2;
		} else if (is(a, "-x", NULL)) {
			s->gds |= !strncmp(v, "PMIX_MCA_gds", 12);
			i++;
		} else if (is(a, "--bind-to", "-bind-to")) {
			s->bind = true;
			i++;
		} else if (is(a, "--host", "-host") || is(a, "-H", NULL)) {
			host_list(j, v);
			i++;
		} else if (is(a, "--hostfile", "-hostfile") ||
			   is(a, "--machinefile", "-machinefile") ||
			   is(a, "--default-hostfile", "-default-hostfile")) {
			host_file(j, v);
			i++;
		} else if (is(a, "-np", "--np") || is(a, "-n", "-c")) {
			long np;

			if (util_parse_long(v, 1, 1 << 20, &np))
				j->np = (int)np;
			i++;
		}
	}
}

static void push(char ***argv, size_t *n, const char *arg)
{
	*argv = xrealloc(*argv, (*n + 2) * sizeof(**argv));
	(*argv)[(*n)++] = xstrdup(arg);
	(*argv)[*n] = NULL;
}

static const char *find_mpirun(const struct launch_opts *o)
{
	const char *env = getenv("RACKS_MPIRUN"), *path = getenv("PATH");
	char *copy, *save = NULL;
	bool found = false;

	if (o->mpirun)
		return o->mpirun;
	if (env && *env)
		return env;
	/* Debian's alternatives may point mpirun at MPICH: Open MPI's own
	 * name first. */
	copy = xstrdup(path ? path : "/usr/bin:/bin");
	for (char *d = strtok_r(copy, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *p = xasprintf("%s/mpirun.openmpi", d);

		found = access(p, X_OK) == 0;
		free(p);
	}
	free(copy);
	return found ? "mpirun.openmpi" : "mpirun";
}

static char *absolute(const char *path)
{
	char cwd[PATH_MAX];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return xstrdup(path);
	return xasprintf("%s/%s", cwd, path);
}

static int fill_job(const struct launch_opts *o, const struct said *s,
		    struct job_info *j, const char *self)
{
	const char *env = getenv("RACKS_CKPT_DIR");
	const char *rsh = s->rsh ? s->rsh : getenv("OMPI_MCA_plm_rsh_agent");
	char *dir = absolute(o->ckpt_dir ? o->ckpt_dir :
			     env && *env ? env : ".rackckpt");
	struct timespec now = util_realtime();
	size_t len = 0;

	if (strlen(dir) >= sizeof(j->ckpt_dir)) {
		util_err("mpirun: the checkpoint directory %s is too long", dir);
		free(dir);
		return -ENAMETOOLONG;
	}
	j->started = (double)now.tv_sec + now.tv_nsec / 1e9;
	/* Both fit: launch_main() checked. */
	snprintf(j->rackckpt, sizeof(j->rackckpt), "%.*s",
		 (int)sizeof(j->rackckpt) - 1, self);
	snprintf(j->ckpt_dir, sizeof(j->ckpt_dir), "%.*s",
		 (int)sizeof(j->ckpt_dir) - 1, dir);
	/* Open MPI's default is "ssh : rsh"; the first is ours too. */
	snprintf(j->rsh, sizeof(j->rsh), "%.*s",
		 rsh ? (int)strcspn(rsh, ":") : 3, rsh ? rsh : "ssh");
	len = (size_t)snprintf(j->command, sizeof(j->command), "mpirun");
	for (size_t i = 0; o->args[i] && len < sizeof(j->command) - 1; i++)
		len += (size_t)snprintf(j->command + len, sizeof(j->command) - len,
					" %s", o->args[i]);
	free(dir);
	return 0;
}

/* What mpirun's arguments or our own path rule out: an exit code, or 0. */
static int refuse(const struct said *s, const char *self, size_t max)
{
	if (s->fork_agent) {
		util_err("mpirun: rackckpt sets orte_fork_agent itself (to run "
			 "each rank under 'rackckpt run'): leave it out");
		return EXIT_USAGE;
	}
	if (strlen(self) >= max) {
		util_err("mpirun: the path of rackckpt (%s) is too long", self);
		return EXIT_REFUSED;
	}
	/* mpirun splits the fork agent's value at spaces. */
	if (strchr(self, ' ')) {
		util_err("mpirun: the path of rackckpt (%s) holds a space, "
			 "which Open MPI's fork agent cannot take", self);
		return EXIT_REFUSED;
	}
	if (s->btl && (strstr(s->btl_value, "vader") ||
		       strstr(s->btl_value, "sm")) && s->btl_value[0] != '^')
		util_err("mpirun: --mca btl %s: ranks of one node that talk "
			 "through shared memory cannot move (tcp,self can)",
			 s->btl_value);
	return 0;
}

int launch_main(const struct launch_opts *o)
{
	struct job_info *j = xcalloc(1, sizeof(*j));
	struct said s = { 0 };
	struct registry *reg;
	char self[PATH_MAX], *env, *agent, **argv = NULL;
	size_t n = 0;
	ssize_t len;
	int lock_fd, ret, status;
	pid_t pid;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		util_fatal("cannot find my own binary: %s", strerror(errno));
	self[len] = '\0';
	scan_args(o->args, &s, j);
	ret = refuse(&s, self, sizeof(j->rackckpt));
	if (!ret && fill_job(o, &s, j, self))
		ret = EXIT_USAGE;
	if (ret) {
		jobinfo_free(j);
		free(j);
		return ret;
	}
	ret = jobdir_take(&j->id, &lock_fd);
	if (ret) {
		util_err("mpirun: no job id in %s: %s", jobdir_path(),
			 strerror(-ret));
		jobinfo_free(j);
		free(j);
		return EXIT_REFUSED;
	}
	if (registry_open(&reg, j, &env)) {
		close(lock_fd);
		return EXIT_REFUSED;
	}
	setenv("RACKS_JOB", env, 1);
	free(env);
	agent = xasprintf("%s run --openmpi --", self);
	push(&argv, &n, find_mpirun(o));
	push(&argv, &n, "--mca");
	push(&argv, &n, "orte_fork_agent");
	push(&argv, &n, agent);
	push(&argv, &n, "-x");
	push(&argv, &n, "RACKS_JOB");
	/* Where the tests keep their relay files, if they say so. */
	if (getenv("RACKS_RELAY_DIR")) {
		push(&argv, &n, "-x");
		push(&argv, &n, "RACKS_RELAY_DIR");
	}
	if (!s.pml)
		push(&argv, &n, "--mca"), push(&argv, &n, "pml"),
		push(&argv, &n, "ob1");
	if (!s.btl)
		push(&argv, &n, "--mca"), push(&argv, &n, "btl"),
		push(&argv, &n, "tcp,self");
	if (!s.shmem)
		push(&argv, &n, "--mca"), push(&argv, &n, "shmem"),
		push(&argv, &n, "mmap");
	if (!s.gds)
		push(&argv, &n, "-x"), push(&argv, &n, "PMIX_MCA_gds=hash");
	if (!s.bind)
		push(&argv, &n, "--bind-to"), push(&argv, &n, "none");
	for (size_t i = 0; o->args[i]; i++)
		push(&argv, &n, o->args[i]);
	free(agent);
	fprintf(stderr, "rackckpt: job %d: 'rackckpt jobs' lists its ranks, "
		"'rackckpt migrate %d RANK --to HOST' moves one\n", j->id, j->id);
	pid = fork();
	if (pid < 0)
		util_fatal("fork: %s", strerror(errno));
	if (pid == 0)
		util_exec(argv);
	status = registry_run(reg, pid);
	registry_free(reg);
	close(lock_fd);
	for (size_t i = 0; i < n; i++)
		free(argv[i]);
	free(argv);
	util_exit_like(status);
}
