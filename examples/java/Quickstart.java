// mixp from Java: an MLP on synthetic 28x28 images, trained with AdamW.
// Build and run (from a mixp build tree):
//   javac -cp build/bindings/java/mixp.jar -d out examples/java/Quickstart.java
//   java -cp build/bindings/java/mixp.jar:out Quickstart
// The lines between the README markers are the README's Java loop
// (bindings/java/src/test/java/org/mixp/ReadmeTest.java checks they match).
import org.mixp.Dataset;
import org.mixp.Loader;
import org.mixp.Mixp;
import org.mixp.Module;
import org.mixp.Optimizer;
import org.mixp.Reduction;
import org.mixp.Session;
import org.mixp.Tensor;

public final class Quickstart {
  public static void main(String[] args) {
    // README:begin
    try (Session s = new Session(1);
         Dataset data = Dataset.synthetic(s, 1024); Loader loader = new Loader(data, 64, true, 0);
         Module model = Module.model(s, "mlp in=784 hidden=64 classes=10");
         Optimizer opt = Optimizer.adamW(s, model.parameters())) {
      for (int epoch = 1; epoch <= 3; epoch++) {
        double sum = 0;
        for (Loader.Batch b = loader.next(); b != null; b = loader.next()) {
          try (Loader.Batch batch = b; Tensor logits = model.forward(batch.x);
               Tensor loss = Mixp.crossEntropy(logits, batch.y, Reduction.MEAN)) {
            opt.zeroGrad(); loss.backward(); opt.step(); sum += loss.item();
          }
        }
        System.out.printf("epoch %d: mean loss %.4f%n", epoch, sum / loader.numBatches());
      }
    }
    // README:end
  }
}
