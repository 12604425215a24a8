package mixp

import (
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// Module is a layer or a model of the zoo: parameters, buffers, Forward.
type Module struct{ h handle }

func (m *Module) hdl() *handle { return &m.h }

func (m *Module) p() uintptr {
	if m == nil {
		return 0
	}
	return m.h.ptr
}

func moduleOut(call func(out *uintptr) raw.Status, keep ...any) (*Module, error) {
	var out uintptr
	err := check(call(&out))
	runtime.KeepAlive(keep)
	if err != nil {
		return nil, err
	}
	m := &Module{}
	track(m, out, raw.Mixp_module_destroy)
	return m, nil
}

// NewLinear is y = x W^T + b with W [out, in] (PyTorch's initialisation).
func NewLinear(s *Session, in, out int64, bias bool, dtype DType) (*Module, error) {
	return moduleOut(func(o *uintptr) raw.Status {
		return raw.Mixp_linear_create(s.p(), in, out, b2i(bias), raw.Mixp_dtype(dtype), o)
	}, s)
}

// NewModel builds a model of the zoo from a config such as
// "mlp in=784 hidden=256,128 classes=10" (see docs/model-zoo.md).
func NewModel(s *Session, config string) (*Module, error) {
	return moduleOut(func(o *uintptr) raw.Status { return raw.Mixp_model_create(s.p(), config, o) }, s)
}

// Close destroys the module (parameter tensors obtained from it stay valid).
func (m *Module) Close() error {
	if m != nil {
		m.h.close()
	}
	return nil
}

// Forward runs the module on x.
func (m *Module) Forward(x *Tensor) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status { return raw.Mixp_module_forward(m.p(), x.p(), out) }, m, x)
}

// Parameters are new references to every parameter, in registration order.
func (m *Module) Parameters() ([]*Tensor, error) {
	n := raw.Mixp_module_num_parameters(m.p())
	if n < 0 { // closed: mixp_module_parameter reports the NULL module
		_, err := tensorOut(func(out *uintptr) raw.Status { return raw.Mixp_module_parameter(m.p(), 0, out) }, m)
		return nil, err
	}
	ps := make([]*Tensor, 0, n)
	for i := 0; i < n; i++ {
		p, err := tensorOut(func(out *uintptr) raw.Status { return raw.Mixp_module_parameter(m.p(), i, out) }, m)
		if err != nil {
			closeAll(ps)
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// ParameterNames are the parameters' names (PyTorch style, e.g. "0.weight").
func (m *Module) ParameterNames() []string {
	n := raw.Mixp_module_num_parameters(m.p())
	if n < 0 { // closed
		return nil
	}
	names := make([]string, n)
	for i := range names {
		names[i] = raw.Mixp_module_parameter_name(m.p(), i)
	}
	runtime.KeepAlive(m)
	return names
}

// NumParameterElements is the total number of parameter elements.
func (m *Module) NumParameterElements() int64 {
	n := raw.Mixp_module_num_parameter_elements(m.p())
	runtime.KeepAlive(m)
	return n
}

// SetTraining switches dropout and batch norm between training and evaluation.
func (m *Module) SetTraining(on bool) error {
	err := check(raw.Mixp_module_set_training(m.p(), b2i(on)))
	runtime.KeepAlive(m)
	return err
}

// LoadHFGPT2 imports Hugging Face GPT-2 weights into a zoo gpt made with
// gelu=tanh: path is the model.safetensors that GPT2LMHeadModel's
// save_pretrained writes, or its directory (with config.json, which is
// checked). opt, when not nil, is the optimizer holding fp32 masters of
// decorated (O2) parameters: the masters take the file's values too. The
// whole file is checked first; a failed import changes nothing and its
// error names the tensors.
func (m *Module) LoadHFGPT2(path string, opt *Optimizer) error {
	err := check(raw.Mixp_model_load_hf_gpt2(m.p(), opt.p(), path))
	runtime.KeepAlive(m)
	runtime.KeepAlive(opt)
	return err
}

// SaveHFGPT2 writes dir/model.safetensors and dir/config.json in the
// Hugging Face GPT-2 layout (transformers' GPT2LMHeadModel.from_pretrained
// reads them), values rounded once to dtype (F32, F16 or BF16). opt, when
// not nil, holds fp32 masters, which are written instead of the
// half-precision parameters.
func (m *Module) SaveHFGPT2(dir string, dtype DType, opt *Optimizer) error {
	err := check(raw.Mixp_model_save_hf_gpt2(m.p(), opt.p(), dir, raw.Mixp_dtype(dtype)))
	runtime.KeepAlive(m)
	runtime.KeepAlive(opt)
	return err
}

// closeAll closes every tensor of ts (nil entries are skipped).
func closeAll(ts []*Tensor) {
	for _, t := range ts {
		t.Close()
	}
}

// CloseAll closes tensors, e.g. the temporaries of one training step.
func CloseAll(ts ...*Tensor) { closeAll(ts) }
