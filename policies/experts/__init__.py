"""Scripted experts: policies with privileged access to the simulator they are bound to.

An expert reads the env's state in ``bind(env)``/``act`` instead of only its observations, so it lives
with the policies (a downward import of ``envs``), not inside the envs:

- :mod:`policies.experts.calvin`: ``ScriptedExpert``, the IK expert for CALVIN's 34 tasks;
- :mod:`policies.experts.calvin_plan`: ``PlanExpert``, that expert's motion as SpatialTree plans (what a
  perfect planner writes on CALVIN);
- :mod:`policies.experts.libero`: ``LiberoExpert``, the scripted expert for LIBERO's BDDL goals
  (``--policy expert`` on ``benchmarks.libero``), with :mod:`policies.experts.libero_goals` (goal
  parsing and grasp choice, no simulator);
- :mod:`policies.experts.libero_plan`: ``LiberoPlanExpert``, that expert's motion as SpatialTree plans
  (what a perfect planner writes on LIBERO);
- :mod:`policies.experts.navigation`: ``ShortestPathExpert`` for EB-style navigation;
- :mod:`policies.experts.manipulation`: ``EBManipulationExpert`` for EB-style manipulation.
"""
