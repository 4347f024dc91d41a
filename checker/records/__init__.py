"""A batch and the TA's records: grading a class (one process or a pool), the output folder and its one owner (owned), grades, manual grades, rosters and LMS names, exports, resuming, the class report. Above `running`.

No logic here: see the modules."""
