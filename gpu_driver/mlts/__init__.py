"""MLTS-style model benchmarks: a TF Lite model on a driver device against TF Lite on the CPU.

``gpu-driver bench MODEL.tflite … --compare litert --html report.html`` (gpu_driver/cli.py) runs
:func:`gpu_driver.mlts.session.benchmark_model` per model: preparation time (cold and from the
compilation cache), the latency distribution, and with a LiteRT peer its latency on the same input
in the same process, alternating, plus the accuracy verdict (:mod:`gpu_driver.mlts.accuracy`);
:mod:`gpu_driver.mlts.report` prints the table and writes the HTML report.
"""
