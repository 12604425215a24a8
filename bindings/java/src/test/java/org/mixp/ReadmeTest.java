package org.mixp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The README's Java loop is the marked part of examples/java/Quickstart.java,
 * which CTest runs (java_example); this test checks the README shows exactly it.
 */
class ReadmeTest {
  private static List<String> marked(String path) throws IOException {
    List<String> out = new ArrayList<>();
    boolean in = false;
    int indent = -1;
    for (String l : Files.readAllLines(Paths.get(path))) {
      String t = l.trim();
      if (t.equals("// README:begin")) {
        in = true;
        indent = l.indexOf('/');
      } else if (t.equals("// README:end")) {
        return out;
      } else if (in) {
        out.add(l.length() >= indent ? l.substring(indent) : l.trim());
      }
    }
    throw new AssertionError(path + ": no README markers");
  }

  @Test
  void readmeShowsTheTestedLoop() throws IOException {
    List<String> want = marked(System.getProperty("mixp.example"));
    assertTrue(want.size() <= 15, "the README loop has " + want.size() + " lines, the issue allows 15");
    String readme = new String(Files.readAllBytes(Paths.get(System.getProperty("mixp.readme"))));
    int sec = readme.indexOf("\n## Java\n");
    assertTrue(sec >= 0, "README.md has no '## Java' section");
    int start = readme.indexOf("```java\n", sec);
    assertTrue(start >= 0, "README.md's Java section has no ```java block");
    start += "```java\n".length();
    String block = readme.substring(start, readme.indexOf("```", start));
    assertEquals(String.join("\n", want), block.stripTrailing());
  }
}
