package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;

/** A layer or a model of the zoo: parameters, buffers and {@link #forward}. */
public final class Module extends NativeHandle {
  private Module(long ptr) {
    super(ptr, mixp::mixp_module_destroy);
  }

  private static Module make(Tensor.Call c, Object keep) {
    long[] out = new long[1];
    try {
      c.run(out);
    } finally {
      Reference.reachabilityFence(keep);
    }
    return new Module(out[0]);
  }

  /** y = x W^T + b with W [out, in], PyTorch's initialisation. */
  public static Module linear(Session s, long in, long out, boolean bias, DType dtype) {
    return make(o -> mixp.mixp_linear_create(Tensor.p(s), in, out, bias ? 1 : 0, dtype.code, o), s);
  }

  /** A model of the zoo, e.g. "mlp in=784 hidden=256,128 classes=10" (docs/model-zoo.md). */
  public static Module model(Session s, String config) {
    return make(o -> mixp.mixp_model_create(Tensor.p(s), config, o), s);
  }

  /** Runs the module on x. */
  public Tensor forward(Tensor x) {
    return Tensor.make(out -> mixp.mixp_module_forward(ptr(), Tensor.p(x), out), this, x);
  }

  /** @return new references to every parameter, in registration order */
  public Tensor[] parameters() {
    try {
      int n = mixp.mixp_module_num_parameters(ptr());
      if (n < 0) { // closed: mixp_module_parameter throws for the NULL module
        mixp.mixp_module_parameter(ptr(), 0, new long[1]);
      }
      Tensor[] ps = new Tensor[n];
      for (int i = 0; i < n; i++) {
        final int idx = i;
        ps[i] = Tensor.make(out -> mixp.mixp_module_parameter(ptr(), idx, out), this);
      }
      return ps;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the parameters' names (PyTorch style, e.g. "0.weight") */
  public String[] parameterNames() {
    try {
      String[] names = new String[Math.max(0, mixp.mixp_module_num_parameters(ptr()))];
      for (int i = 0; i < names.length; i++) {
        names[i] = mixp.mixp_module_parameter_name(ptr(), i);
      }
      return names;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the total number of parameter elements */
  public long numParameterElements() {
    try {
      return mixp.mixp_module_num_parameter_elements(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Switches dropout and batch norm between training and evaluation. */
  public void setTraining(boolean on) {
    try {
      mixp.mixp_module_set_training(ptr(), on ? 1 : 0);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Imports Hugging Face GPT-2 weights into a zoo gpt made with gelu=tanh:
   * path is the model.safetensors that GPT2LMHeadModel's save_pretrained
   * writes, or its directory (with config.json, which is checked). opt, when
   * not null, holds fp32 masters of decorated (O2) parameters, which take the
   * file's values too. The whole file is checked first: a failed import
   * changes nothing and its exception names the tensors.
   */
  public void loadHfGpt2(String path, Optimizer opt) {
    try {
      mixp.mixp_model_load_hf_gpt2(ptr(), Tensor.p(opt), path);
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(opt);
    }
  }

  /**
   * Writes dir/model.safetensors and dir/config.json in the Hugging Face
   * GPT-2 layout (transformers reads them), values rounded once to dtype
   * (F32, F16 or BF16). opt, when not null, holds fp32 masters, which are
   * written instead of the half-precision parameters.
   */
  public void saveHfGpt2(String dir, DType dtype, Optimizer opt) {
    try {
      mixp.mixp_model_save_hf_gpt2(ptr(), Tensor.p(opt), dir, dtype.code);
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(opt);
    }
  }
}
