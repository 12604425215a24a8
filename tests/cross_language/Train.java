// The cross-language run from Java (see train.c): the same calls through the
// org.mixp classes must give the same final loss, bit for bit. Run by
// bindings/java/CMakeLists.txt with the mixp jar on the class path.
import org.mixp.AmpLevel;
import org.mixp.Autocast;
import org.mixp.DType;
import org.mixp.Dataset;
import org.mixp.GradScaler;
import org.mixp.Loader;
import org.mixp.Mixp;
import org.mixp.Module;
import org.mixp.Optimizer;
import org.mixp.Reduction;
import org.mixp.Session;
import org.mixp.Tensor;

public final class Train {
  private static final int STEPS = 200;

  public static void main(String[] args) {
    try (Session s = new Session("cpu", 1, 2);
         Dataset data = Dataset.synthetic(s, 4096, 1, 28, 28, 10, 1);
         Loader loader = new Loader(data, 64, true, 1);
         Module model = Module.model(s, "mlp in=784 hidden=256,128 classes=10")) {
      Tensor[] params = model.parameters();
      double last = 0;
      try (Optimizer opt = Optimizer.adamW(s, params);
           GradScaler scaler = new GradScaler(s, GradScaler.Mode.DYNAMIC)) {
        for (int step = 0; step < STEPS; step++) {
          Loader.Batch b = loader.next();
          if (b == null) { // end of an epoch: the next call starts another
            b = loader.next();
          }
          try (Loader.Batch batch = b) {
            Tensor loss;
            try (Autocast ac = s.autocast(AmpLevel.O1, DType.BF16);
                 Tensor logits = model.forward(batch.x)) {
              loss = Mixp.crossEntropy(logits, batch.y, Reduction.MEAN);
            }
            try (Tensor l = loss) {
              opt.zeroGrad();
              try (Tensor scaled = scaler.scale(l)) {
                scaled.backward();
              }
              scaler.step(opt);
              scaler.update();
              last = l.item();
            }
          }
        }
        System.out.printf("final_loss=%.9g scale=%s%n", last, fmt(scaler.getScale()));
        System.out.printf("final_loss_bits=0x%016x%n", Double.doubleToRawLongBits(last));
      } finally {
        Mixp.closeAll(params);
      }
    }
  }

  private static String fmt(double v) {
    return v == Math.rint(v) ? String.valueOf((long) v) : String.valueOf(v);
  }
}
