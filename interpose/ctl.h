/* ctl.h: `cudaspy ctl` (ctl.c), for the launcher's main. */
#ifndef CUDASPY_INTERPOSE_CTL_H
#define CUDASPY_INTERPOSE_CTL_H

/** `cudaspy ctl PID start|stop` with @p argv as main's. @return the exit status */
int ctl_main(int argc, char **argv);

#endif
