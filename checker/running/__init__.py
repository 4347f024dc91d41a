"""The trusted side's hold on student code: the workers (starting, limits, asks), what a worker is given and what is read of a submission, the pytest plugin and its fixtures, the reference's recorded and cached answers. Above `judging` and `render`.

No logic here: see the modules."""
