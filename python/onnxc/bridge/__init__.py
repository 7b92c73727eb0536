"""The exporter bridge's torch 2.x modules: what turns a torch.export
program into the graph the .fxir writer prints.

  hops      higher-order ops: grad-mode and autocast regions inlined,
            torch.cond / while_loop lowered to onnxc's If / Loop regions,
            assertion and metadata ops checked and dropped
  capture   torch.export first, then the fallback captures, the one used
            named in the report
"""
