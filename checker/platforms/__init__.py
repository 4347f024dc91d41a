"""Where hwcheck runs besides a TA's terminal: Gradescope, CI and GitHub Classroom, notebooks, the student kit, a cluster, and the checks of an assignment folder (validate). Above `records`.

No logic here: see the modules."""
