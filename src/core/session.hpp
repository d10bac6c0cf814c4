// The world model and the Sessions model (MPI 4.0 §11.3) share one engine: whichever comes
// first (MPI_Init or the first MPI_Session_init) starts it. MPI_Finalize stops it when no
// session is open; otherwise it stops at process exit, so that sessions may be finalized and
// initialized again (MPI 4.0 §11.3.1) without restarting the connection to the launcher.
// g_init_state (api.hpp) says whether the engine runs, which is what entry points need;
// the world model's own state answers MPI_Initialized / MPI_Finalized.
// Threading: called from the environment entry points (env.cpp, session.cpp).
#pragma once

namespace wanmpi::core {

// 0 = MPI_Init not called, 1 = initialized, 2 = MPI_Finalize called.
int world_state();
void set_world_state(int s);
// Sessions initialized and not yet finalized.
int sessions_open();
// Stops the engine (MPI_Finalize with no session open, or at exit after sessions). Returns an
// MPI error code.
int engine_stop();

}  // namespace wanmpi::core
